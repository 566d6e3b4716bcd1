// The bare loop the CSV file drop is compared with (bench/csv.mjs runs it as a child, on a file
// of the same shape and size): csv-parse streamed → one record per order (two lines each) → the
// service's compiled zod schema → a confirm channel, 1000 messages then waitForConfirms, nothing
// else: no readiness, claims, receipts, lineage, repeat filter, stable ids or second pass; its
// messages carry the same properties and headers as the service's. The
// constant parts of each record come from the valid fixture (what the onboarding profile adds in
// the service). Prints one JSON line: lines, records, seconds.
// Usage: node bench/csv-bare.mjs <file.csv> (env AMQP_URL, BENCH_EXCHANGE, BENCH_ROUTING_KEY)
import { randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parse } from 'csv-parse';
import { connect } from 'amqplib';
import { KINDS } from '../dist/records/index.js';

const [file] = process.argv.slice(2);
const { AMQP_URL, BENCH_EXCHANGE, BENCH_ROUTING_KEY } = process.env;
const CHUNK = 1000;
const schema = KINDS['sales-orders'].schema;
const [template] = JSON.parse(
  readFileSync(new URL('../fixtures/sales-orders/valid.json', import.meta.url), 'utf8'),
);

function toRecord(rows) {
  const first = rows[0];
  const shipmentId = first.OrdNumber;
  const due = `${first.DueOutDate}T00:00:00Z`;
  return {
    ...template,
    identifiers: {
      ...template.identifiers,
      shipmentId,
      businessId: first.AccountID,
      ownerId: first.AccountID,
    },
    dates: { dueOut: due, shipment: due },
    shipAddresses: template.shipAddresses.map((a) => ({ ...a, shipmentId })),
    shipContacts: template.shipContacts.map((c) => ({ ...c, shipmentId })),
    shipmentLines: rows.map((r) => ({
      shipmentId,
      line: r.oOrderLines_LineNumber,
      skuId: r.oOrderLines_ProductID,
      product: { unitOfMeasure: r.oOrderLines_UoM },
      quantities: { ordered: Number(r.oOrderLines_Qty), required: Number(r.oOrderLines_Qty) },
      financial: { price: Number(r.oOrderLines_SalesUnitPrice) },
    })),
  };
}

const connection = await connect(AMQP_URL);
const channel = await connection.createConfirmChannel();
const correlationId = randomUUID();
// The headers the service's drop messages carry (business, store type, pipeline, W3C trace of the
// file): the broker's work per message is the limit here, so both sides send the same format.
const headers = {
  'business-id': template.identifiers.businessId,
  source: 'local',
  'source-name': 'bench-csv-1000000',
  traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-00`,
};
let lines = 0;
let records = 0;
let pending = 0;

async function publish(record) {
  const result = schema.safeParse(record);
  if (!result.success) throw new Error(`invalid record: ${JSON.stringify(result.error.issues)}`);
  const body = Buffer.from(JSON.stringify(result.data));
  const ok = channel.publish(BENCH_EXCHANGE, BENCH_ROUTING_KEY, body, {
    persistent: true,
    mandatory: true,
    messageId: randomUUID(),
    correlationId,
    type: 'sales-orders',
    contentType: 'application/json',
    timestamp: Math.floor(Date.now() / 1000),
    headers,
  });
  records += 1;
  if (!ok) await new Promise((resolve) => channel.once('drain', resolve));
  if (++pending === CHUNK) {
    await channel.waitForConfirms();
    pending = 0;
  }
}

const started = performance.now();
let order = [];
for await (const row of createReadStream(file).pipe(parse({ columns: true }))) {
  lines += 1;
  if (order.length && order[0].OrdNumber !== row.OrdNumber) {
    await publish(toRecord(order));
    order = [];
  }
  order.push(row);
}
if (order.length) await publish(toRecord(order));
await channel.waitForConfirms();
const seconds = (performance.now() - started) / 1000;
await connection.close();
console.log(JSON.stringify({ lines, records, seconds }));
