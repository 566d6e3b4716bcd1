import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import type { Candidate, ConfirmedRecords } from '../../src/ingest/batch.js';
import { PUBLISH_CHUNK } from '../../src/ingest/flow.js';
import { KINDS } from '../../src/records/index.js';
import { validRecords } from '../records/fixtures.js';
import { useRealIngest } from '../support/real-ingest.js';

const log = createLogger({ level: 'silent' });
const base = {
  businessId: 'ACME',
  correlationId: 'lineage-test',
  source: { type: 'local', name: 'lineage' },
  log,
};

function masterData(n: number): unknown[] {
  return Array.from({ length: n }, (_, i) => {
    const record = structuredClone(validRecords('master-data')[0]!) as {
      product: { identifiers: { skuId: string } };
    };
    record.product.identifiers.skuId = `SKU-LIN-${i}`;
    return record;
  });
}

const real = useRealIngest();

describe('ingest tells a lineage sink what the broker confirmed', () => {
  it('a streamed batch: once per confirmed chunk, in order, with each record number, index and input line', async () => {
    const records = masterData(2 * PUBLISH_CHUNK + 5);
    const told: ConfirmedRecords[] = [];
    const response = await real.ingest({
      ...base,
      mode: 'stream',
      kind: KINDS['master-data'],
      async *open(): AsyncIterable<Candidate> {
        for (let i = 0; i < records.length; i++) yield { record: records[i], line: 2 + 3 * i };
      },
      onConfirmed: async (confirmed) => void told.push(confirmed),
    });
    // The sink has the ids: the answer does not collect them again.
    expect(response.messageIds).toEqual([]);
    const queued = (await real.topology.messages()).map((m) => m.properties.messageId);
    expect(told.map((c) => [c.first, c.messageIds.length])).toEqual([
      [0, PUBLISH_CHUNK],
      [PUBLISH_CHUNK, PUBLISH_CHUNK],
      [2 * PUBLISH_CHUNK, 5],
    ]);
    expect(told.flatMap((c) => c.messageIds)).toEqual(queued);
    expect(told.flatMap((c) => c.references)).toEqual(records.map((_, i) => `SKU-LIN-${i}`));
    expect(told.flatMap((c) => c.lines)).toEqual(records.map((_, i) => 2 + 3 * i));
    expect(queued).toHaveLength(records.length);
  });

  it('an array batch: once, after the confirm, without lines; a rejected batch: never', async () => {
    const records = masterData(3);
    const told: ConfirmedRecords[] = [];
    const onConfirmed = async (confirmed: ConfirmedRecords) => void told.push(confirmed);
    const response = await real.ingest({
      ...base,
      mode: 'array',
      kind: KINDS['master-data'],
      records,
      onConfirmed,
    });
    expect(response.messageIds).toEqual([]);
    expect(told).toEqual([
      {
        first: 0,
        messageIds: (await real.topology.messages()).map((m) => m.properties.messageId),
        references: ['SKU-LIN-0', 'SKU-LIN-1', 'SKU-LIN-2'],
      },
    ]);

    await expect(
      real.ingest({
        ...base,
        mode: 'array',
        kind: KINDS['master-data'],
        records: [...records, { product: {} }],
        onConfirmed,
      }),
    ).rejects.toThrow(/failed validation/);
    expect(told).toHaveLength(1);
    await real.topology.messages();
  });
});
