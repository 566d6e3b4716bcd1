import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MalformedBody } from '../../src/errors.js';
import type { BatchEnd, BatchEnds } from '../../src/ingest/batch-end.js';
import type { Batch, Candidate, ConfirmedRecords, Ingest } from '../../src/ingest/batch.js';
import { createIngest, PUBLISH_CHUNK } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { createLogger } from '../../src/log.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import { KINDS } from '../../src/records/index.js';
import { validRecords } from '../records/fixtures.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';

/** The one end of every batch, as a test records it: what the history would be told. */
function recordingEnds() {
  const ended: BatchEnd[] = [];
  const confirmed: Array<{ batchId: string; records: ConfirmedRecords }> = [];
  const ends: BatchEnds = {
    confirmed: (batchId, _businessId, records) => void confirmed.push({ batchId, records }),
    ended: (end) => void ended.push(end),
  };
  return { ends, ended, confirmed };
}

const log = createLogger({ level: 'silent' });
const kind = KINDS['master-data'];
const skus = (n: number, prefix = 'SKU-END') =>
  Array.from({ length: n }, (_, i) => {
    const record = structuredClone(validRecords('master-data')[0]!) as {
      product: { identifiers: { skuId: string } };
    };
    record.product.identifiers.skuId = `${prefix}-${i}`;
    return record;
  });
const base = (correlationId: string) => ({
  kind,
  businessId: 'ACME',
  correlationId,
  source: { type: 'http', name: '/api/v2/master-data' },
  log,
});

let routed: TestTopology;
let unrouted: TestTopology;
const publishers: RabbitMqPublisher[] = [];
async function ingestOver(topology: TestTopology, ends: BatchEnds): Promise<Ingest> {
  const publisher = createRabbitMqPublisher(
    { url: AMQP_URL, exchange: topology.exchange, queues: [] },
    log,
  );
  publishers.push(publisher);
  await publisher.start();
  return createIngest({ publisher, routingKeyFor: compileRoutingKey('{kind}.{businessId}'), ends });
}
beforeAll(async () => {
  routed = await declareTestTopology({ bindingKeys: ['#'], prefix: 'batch-end' });
  // Nothing is bound: every message is returned unroutable, so the batch is `unavailable` (503).
  unrouted = await declareTestTopology({
    bindingKeys: ['nothing.binds.this'],
    prefix: 'batch-end',
  });
});
afterAll(async () => {
  await Promise.all(publishers.map((publisher) => publisher.close()));
  await routed.cleanup();
  await unrouted.cleanup();
});

describe('the one end of every batch (BatchEnds)', () => {
  it('is told exactly once per batch: accepted with its records, rejected, unreadable and unavailable with their problem and none', async () => {
    const { ends, ended, confirmed } = recordingEnds();
    const ingest = await ingestOver(routed, ends);
    const accepted = await ingest({ ...base('accepted'), mode: 'array', records: skus(3) });
    await expect(
      ingest({ ...base('rejected'), mode: 'array', records: [...skus(2), { product: {} }] }),
    ).rejects.toThrow(/failed validation/);
    await expect(
      ingest({
        ...base('unreadable'),
        mode: 'array',
        records: [],
        unreadable: new MalformedBody({ detail: 'Expected a JSON array' }),
      }),
    ).rejects.toThrow(MalformedBody);
    const unavailable = await ingestOver(unrouted, ends);
    await expect(
      unavailable({ ...base('unavailable'), mode: 'array', records: skus(1) }),
    ).rejects.toMatchObject({ status: 503 });

    expect(ended.map((end) => [end.correlationId, end.outcome, end.recordCount])).toEqual([
      ['accepted', 'accepted', 3],
      ['rejected', 'rejected', 0],
      ['unreadable', 'rejected', 0],
      ['unavailable', 'unavailable', 0],
    ]);
    // An array batch's records come with its end (one write), not chunk by chunk.
    expect(confirmed).toEqual([]);
    const [first, ...refused] = ended;
    expect(first!.records).toEqual([
      {
        first: 0,
        messageIds: accepted.messageIds,
        references: ['SKU-END-0', 'SKU-END-1', 'SKU-END-2'],
      },
    ]);
    expect(first!.source).toEqual({ type: 'http', name: '/api/v2/master-data' });
    for (const end of refused) {
      expect(end.records).toBeUndefined();
      expect(end.problem).toMatchObject({ status: expect.any(Number), type: expect.any(String) });
    }
    expect(new Set(ended.map((end) => end.batchId)).size).toBe(4);
    await routed.messages();
  });

  it('a streamed batch: its records chunk by chunk under its batch id, then its end once', async () => {
    const { ends, ended, confirmed } = recordingEnds();
    const ingest = await ingestOver(routed, ends);
    const records = skus(PUBLISH_CHUNK + 2, 'SKU-STREAM');
    const batch: Batch = {
      ...base('streamed'),
      mode: 'stream',
      async *open(): AsyncIterable<Candidate> {
        for (let i = 0; i < records.length; i++) yield { record: records[i], line: i + 2 };
      },
    };
    const response = await ingest(batch);
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({ outcome: 'accepted', recordCount: records.length });
    expect(ended[0]!.records).toBeUndefined();
    expect(confirmed.map(({ batchId }) => batchId)).toEqual([ended[0]!.batchId, ended[0]!.batchId]);
    expect(confirmed.flatMap(({ records: r }) => r.messageIds)).toEqual(response.messageIds);
    expect(confirmed.flatMap(({ records: r }) => r.lines)).toEqual(records.map((_, i) => i + 2));
    await routed.messages();
  });

  it('a batch its source ends (a dropped file): records told under the given id, no end from the flow', async () => {
    const { ends, ended, confirmed } = recordingEnds();
    const ingest = await ingestOver(routed, ends);
    expect(ingest.ends).toBe(ends); // the drop ends its file through the same port, at settle
    await ingest({
      ...base('dropped'),
      source: { type: 'local', name: 'partner-drop' },
      mode: 'array',
      records: skus(2, 'SKU-DROP'),
      batchId: '01890000-0000-7000-8000-000000000001',
      endedBySource: true,
    });
    await expect(
      ingest({
        ...base('dropped-refused'),
        mode: 'array',
        records: [{ product: {} }],
        endedBySource: true,
      }),
    ).rejects.toThrow(/failed validation/);
    expect(ended).toEqual([]);
    expect(confirmed).toEqual([
      {
        batchId: '01890000-0000-7000-8000-000000000001',
        records: expect.objectContaining({ references: ['SKU-DROP-0', 'SKU-DROP-1'] }),
      },
    ]);
    await routed.messages();
  });
});
