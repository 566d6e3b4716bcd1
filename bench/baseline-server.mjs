// The bare baseline: the same endpoint with nothing but the essentials — node:http, JSON.parse,
// the same compiled zod schema, a string compare for Basic auth, one confirm channel, 202 after
// every confirm. No logging. Started by run.mjs with fork(): reports its port over IPC and exits
// when the parent goes away. Deliberately left out, unlike the service: returned (unroutable)
// messages are not detected, publish back-pressure ('drain') is ignored, and ids are random
// instead of a content hash. Messages carry the same properties and headers as the service's
// (the issue requires them, and they cost the broker ~13% per message: leaving them out would
// compare two different message formats, not two implementations of one endpoint). That includes
// the W3C `traceparent` header the service puts on every message (a new trace per request).
// FIELDS: which of the service's optional properties and headers the messages carry, a comma list
// of `correlationId`, `type`, `timestamp`, `business-id`, `source`, `source-name`, `traceparent`,
// or `all` (the default: the service's full format) or `none` (lean: `messageId`, `contentType`,
// persistent, mandatory only); bench/format.mjs prices each field with it.
// PUBLISH=0: no broker at all — validate, make ids, answer 202 (what the service's sandbox does).
// GUARANTEES=1 (with PUBLISH=0): the same endpoint with the per-request guarantees the service keeps on,
// built from the service's own modules at their cost and nothing else: the JSON body read with the
// nesting-depth check and strict UTF-8 (decode/json.js), stable content-hash message ids
// (ingest/message-id.js), one pino line per batch with its correlation id, and a request
// histogram and record counter (prom-client). It tells the guarantees' cost apart from the rest of
// the service (framework, admission, layering); the targets stay against the bare baseline.
import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from 'amqplib';
import { KINDS } from '../dist/records/index.js';
import { parseJsonArray } from '../dist/decode/json.js';
import { MessageIds } from '../dist/ingest/message-id.js';

const {
  AMQP_URL,
  HOST = '127.0.0.1',
  PORT = '0',
  BENCH_BUSINESS_ID,
  BENCH_EXCHANGE,
  BENCH_ROUTING_KEY,
  BENCH_AUTHORIZATION,
  BENCH_PATH,
  PUBLISH = '1',
  GUARANTEES = '0',
  FIELDS = 'all',
} = process.env;
const ALL_FIELDS = [
  'correlationId',
  'type',
  'timestamp',
  'business-id',
  'source',
  'source-name',
  'traceparent',
];
const fields = new Set(
  FIELDS === 'all' ? ALL_FIELDS : FIELDS === 'none' ? [] : FIELDS.split(',').map((f) => f.trim()),
);
for (const f of fields) if (!ALL_FIELDS.includes(f)) throw new Error(`FIELDS: unknown field ${f}`);
const HEADER_FIELDS = ALL_FIELDS.slice(3);
const schema = KINDS['sales-orders'].schema;
const publishing = PUBLISH !== '0';
const guarantees = GUARANTEES === '1' ? await guaranteed() : undefined;

/** The guarantees' parts, loaded only for GUARANTEES=1 (the bare baseline stays bare). */
async function guaranteed() {
  const { pino } = await import('pino');
  const { Counter, Histogram, Registry } = await import('prom-client');
  const registry = new Registry();
  const seconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'requests',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const records = new Counter({
    name: 'records_total',
    help: 'records',
    labelNames: ['business', 'kind', 'outcome'],
    registers: [registry],
  });
  const log = pino({ base: { service: 'baseline' }, timestamp: pino.stdTimeFunctions.isoTime });
  return { log, seconds, records };
}

let channel;
if (publishing) {
  const connection = await connect(AMQP_URL);
  channel = await connection.createConfirmChannel();
  channel.on('close', () => process.exit(3)); // a lost broker shows up as a dead child in run.mjs
}

/** Publishes every record; resolves with their ids once the broker confirmed all of them. */
function publishAll(records, correlationId) {
  const timestamp = Math.floor(Date.now() / 1000);
  const all = {
    'business-id': BENCH_BUSINESS_ID,
    source: 'http',
    'source-name': BENCH_PATH,
    traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-00`,
  };
  const headers = Object.fromEntries(
    HEADER_FIELDS.filter((f) => fields.has(f)).map((f) => [f, all[f]]),
  );
  const properties = {
    persistent: true,
    mandatory: true,
    contentType: 'application/json',
    ...(fields.has('correlationId') ? { correlationId } : {}),
    ...(fields.has('type') ? { type: 'sales-orders' } : {}),
    ...(fields.has('timestamp') ? { timestamp } : {}),
    ...(Object.keys(headers).length ? { headers } : {}),
  };
  return new Promise((resolve, reject) => {
    let pending = records.length;
    let failed;
    const confirmed = (error) => {
      if (error) failed ??= error;
      if (--pending === 0) failed ? reject(failed) : resolve(ids);
    };
    const ids = records.map((record) => {
      const messageId = randomUUID();
      const body = Buffer.from(JSON.stringify(record));
      channel.publish(
        BENCH_EXCHANGE,
        BENCH_ROUTING_KEY,
        body,
        { ...properties, messageId },
        confirmed,
      );
      return messageId;
    });
  });
}

function send(res, status, body) {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
}

async function handle(req, res) {
  if (req.method !== 'POST' || req.url !== BENCH_PATH)
    return send(res, 404, { error: 'not found' });
  if (req.headers.authorization !== BENCH_AUTHORIZATION)
    return send(res, 401, { error: 'unauthorized' });
  const started = performance.now();
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  let records;
  try {
    const bytes = Buffer.concat(chunks);
    records = guarantees ? parseJsonArray(bytes) : JSON.parse(bytes.toString('utf8'));
  } catch {
    return send(res, 400, { error: 'malformed JSON' });
  }
  if (!Array.isArray(records) || records.length === 0)
    return send(res, 400, { error: 'expected a non-empty array' });
  const valid = new Array(records.length);
  for (let i = 0; i < records.length; i++) {
    const result = schema.safeParse(records[i]);
    if (!result.success)
      return send(res, 400, {
        error: `record ${i} failed validation`,
        issues: result.error.issues,
      });
    valid[i] = result.data;
  }
  try {
    const correlationId = randomUUID();
    let messageIds;
    if (guarantees && !publishing) {
      const ids = new MessageIds(BENCH_BUSINESS_ID, 'sales-orders');
      messageIds = valid.map((record) => ids.encode(record, JSON.stringify(record)).messageId);
    } else
      messageIds = publishing
        ? await publishAll(valid, correlationId)
        : valid.map(() => randomUUID());
    send(res, 202, { success: true, recordCount: valid.length, messageIds, correlationId });
    if (guarantees) {
      const ms = performance.now() - started;
      guarantees.log.info(
        {
          correlationId,
          businessId: BENCH_BUSINESS_ID,
          kind: 'sales-orders',
          records: valid.length,
          ms,
        },
        'batch accepted',
      );
      guarantees.records.inc(
        { business: BENCH_BUSINESS_ID, kind: 'sales-orders', outcome: 'accepted' },
        valid.length,
      );
      guarantees.seconds.observe({ route: BENCH_PATH, method: 'POST', status: '202' }, ms / 1000);
    }
  } catch (error) {
    send(res, 503, { error: String(error?.message ?? error) });
  }
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((error) => send(res, 500, { error: String(error) }));
});
server.listen(Number(PORT), HOST, () => process.send?.({ port: server.address().port }));
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0)); // a clean exit, so --cpu-prof writes its profile
