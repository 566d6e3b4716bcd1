import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  Interrupted,
  MalformedBody,
  PayloadTooLarge,
  PublishFailed,
  ValidationFailed,
} from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import type { Candidate, ConfirmedRecords } from '../../src/ingest/batch.js';
import { createIngest, MAX_LISTED_FAILURES, PUBLISH_CHUNK } from '../../src/ingest/flow.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { createRabbitMqPublisher } from '../../src/publish/index.js';
import { KINDS } from '../../src/records/index.js';
import { validRecords } from '../records/fixtures.js';
import { AMQP_URL } from '../support/broker.js';
import { useRealIngest } from '../support/real-ingest.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const log = createLogger({ level: 'silent' });
const order = validRecords('sales-orders')[0]! as { identifiers: { shipmentId: string } };

function orders(n: number, broken: (i: number) => boolean = () => false): unknown[] {
  return Array.from({ length: n }, (_, i) => {
    const copy = structuredClone(order);
    copy.identifiers.shipmentId = broken(i) ? '' : `SO-STREAM-${i}`;
    return copy;
  });
}

/** A streamed batch over an array, counting how often it is opened. */
function streamOf(records: unknown[], explain = false) {
  const opened = { count: 0 };
  const batch = {
    mode: 'stream' as const,
    kind: KINDS['sales-orders'],
    businessId: 'ACME',
    correlationId: 'stream-test',
    source: { type: 'local', name: 'test-pipeline' },
    log,
    async *open(): AsyncIterable<Candidate> {
      opened.count += 1;
      for (const record of records)
        yield explain
          ? { record, explain: (errors) => errors.map((e) => `line ?: ${e}`) }
          : { record };
    },
  };
  return { batch, opened };
}

const real = useRealIngest();

describe('a streamed batch', () => {
  it('is read once (the publish pass reads the spool) and published whole, in confirmed chunks', async () => {
    const { batch, opened } = streamOf(orders(2500));
    const response = await real.ingest(batch);
    expect(opened.count).toBe(1);
    expect(response.recordCount).toBe(2500);
    expect(new Set(response.messageIds).size).toBe(2500);
    const messages = await real.topology.messages();
    expect(messages.map((m) => m.properties.messageId)).toEqual(response.messageIds);
    expect(messages[0]!.properties.headers).toMatchObject({
      source: 'local',
      'source-name': 'test-pipeline',
    });
  });

  it('spools to the file it is given once past what it keeps in memory, and removes it however the batch ends', async () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'ingest-spool-'));
    const spoolFile = path.join(folder, 'messages.spool');
    try {
      const seen: number[] = [];
      const records = 9000; // ~10 MB of records, past the 8 MiB kept in memory
      const response = await real.ingest({
        ...streamOf(orders(records)).batch,
        spoolFile,
        beforeChunk: async () => void seen.push(statSync(spoolFile).size),
      });
      expect(response.recordCount).toBe(records);
      expect(seen).toHaveLength(records / PUBLISH_CHUNK);
      expect(seen[0]).toBeGreaterThan(records * 1000); // every record went to the file before the first chunk
      expect(existsSync(spoolFile)).toBe(false);
      expect(await real.topology.count()).toBe(records);
      await real.topology.messages();

      const invalid = await real
        .ingest({ ...streamOf(orders(10, (i) => i === 9)).batch, spoolFile })
        .catch((e: unknown) => e);
      expect(invalid).toBeInstanceOf(ValidationFailed);
      expect(existsSync(spoolFile)).toBe(false);

      const lost = await real
        .ingest({
          ...streamOf(orders(10)).batch,
          spoolFile,
          beforeChunk: async () => {
            throw new Error('claim lost');
          },
        })
        .catch((e: unknown) => e);
      expect((lost as Error).message).toBe('claim lost');
      expect(existsSync(spoolFile)).toBe(false);
      expect(await real.topology.count()).toBe(0);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('gives the same message ids as the same records ingested as an array', async () => {
    const records = orders(5);
    const streamed = await real.ingest(streamOf(records).batch);
    const inMemory = await real.ingest({
      ...streamOf(records).batch,
      mode: 'array' as const,
      records,
    });
    expect(inMemory.messageIds).toEqual(streamed.messageIds);
    await real.topology.messages();
  });

  it('is opened once and publishes nothing when any record fails; errors are worded by the candidate', async () => {
    const { batch, opened } = streamOf(
      orders(50, (i) => i === 7 || i === 41),
      true,
    );
    const error = await real.ingest(batch).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationFailed);
    expect((error as ValidationFailed).errors).toEqual([
      { index: 7, errors: ['line ?: identifiers.shipmentId: Expected at least 1 character'] },
      { index: 41, errors: ['line ?: identifiers.shipmentId: Expected at least 1 character'] },
    ]);
    expect(opened.count).toBe(1);
    expect(await real.topology.count()).toBe(0);
  });

  it(`lists at most ${MAX_LISTED_FAILURES} failing records and says how many failed`, async () => {
    const error = (await real
      .ingest(streamOf(orders(1500, () => true)).batch)
      .catch((e: unknown) => e)) as ValidationFailed;
    expect(error.errors).toHaveLength(MAX_LISTED_FAILURES);
    expect(error.message).toBe(
      `1500 of 1500 record(s) failed validation; the first ${MAX_LISTED_FAILURES} are listed; no record was accepted.`,
    );
  });

  it('refuses more records than allowed, and an empty stream, before publishing', async () => {
    await expect(real.ingest({ ...streamOf(orders(20)).batch, maxRecords: 10 })).rejects.toThrow(
      PayloadTooLarge,
    );
    await expect(real.ingest(streamOf([]).batch)).rejects.toThrow(MalformedBody);
    expect(await real.topology.count()).toBe(0);
  });
});

describe('a record whose routing key AMQP cannot carry', () => {
  const siteIngest = () =>
    createIngest({
      publisher: real.publisher,
      routingKeyFor: compileRoutingKey('{kind}.{businessId}.{identifiers.site}'),
    });
  const withSite = (records: unknown[], at: number) =>
    records.map((r, i) => {
      const copy = structuredClone(r) as { identifiers: { site: string } };
      if (i === at) copy.identifiers.site = 'S'.repeat(300);
      return copy;
    });

  it.each(['stream', 'array'] as const)(
    'fails the whole %s batch as invalid, naming the record and the field, and publishes nothing',
    async (mode) => {
      const records = withSite(orders(5), 3);
      const batch =
        mode === 'stream'
          ? streamOf(records).batch
          : { ...streamOf(records).batch, mode: 'array' as const, records };
      const error = await siteIngest()(batch).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationFailed);
      expect((error as ValidationFailed).errors).toEqual([
        {
          index: 3,
          errors: [
            expect.stringMatching(
              /^identifiers\.site: Too long to route: .* 318 bytes; AMQP allows at most 255$/,
            ),
          ],
        },
      ]);
      expect(await real.topology.count()).toBe(0);
    },
  );
});

describe('a streamed batch cut off from the broker part-way', () => {
  it('fails, and reports confirmed only an in-order prefix of its ids, every one of them in the queue', async () => {
    const amqp = new URL(AMQP_URL);
    const proxy = await startTcpProxy({ host: amqp.hostname, port: Number(amqp.port || 5672) });
    const cut = createRabbitMqPublisher(
      {
        url: proxy.urlFor(AMQP_URL),
        exchange: real.topology.exchange,
        queues: [],
        reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
      },
      log,
    );
    try {
      await cut.start();
      const cutIngest = createIngest({
        publisher: cut,
        routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
      });
      const records = orders(6 * PUBLISH_CHUNK);
      const expected = (
        await real.ingest({ ...streamOf(records).batch, correlationId: 'reference' })
      ).messageIds;
      await real.topology.messages(); // the reference run's messages, out of the way

      const reported: string[] = [];
      const { batch } = streamOf(records);
      const onConfirmed = async ({ messageIds: ids }: ConfirmedRecords) => {
        reported.push(...ids);
        if (reported.length === 2 * PUBLISH_CHUNK) proxy.cut({ refuse: true }); // a third chunk may already be on its way
      };
      await expect(cutIngest({ ...batch, onConfirmed })).rejects.toThrow(PublishFailed);
      expect(reported.length % PUBLISH_CHUNK).toBe(0);
      expect(reported.length).toBeGreaterThanOrEqual(2 * PUBLISH_CHUNK);
      expect(reported.length).toBeLessThan(records.length);
      expect(reported).toEqual(expected.slice(0, reported.length));
      const queued = new Set(
        (await real.topology.messages()).map((m) => m.properties.messageId as string),
      );
      for (const id of reported) expect(queued.has(id)).toBe(true);
    } finally {
      await cut.close();
      await proxy.close();
    }
  });
});

describe('a streamed batch stopped part-way (the worker stops)', () => {
  /** 6 chunks; records from 4000 on repeat records of the first 2000, so their ids depend on the numbering of earlier ones. */
  function withRepeats(): unknown[] {
    const records = orders(6 * PUBLISH_CHUNK);
    for (let i = 4 * PUBLISH_CHUNK; i < records.length; i += 3)
      records[i] = structuredClone(records[i - 4 * PUBLISH_CHUNK]);
    return records;
  }

  it('stops after the chunks in flight are confirmed; resumed, publishes only the rest, under the ids a whole run gives', async () => {
    const records = withRepeats();
    const expected = (await real.ingest({ ...streamOf(records).batch, correlationId: 'reference' }))
      .messageIds;
    expect(new Set(expected).size).toBe(records.length);
    await real.topology.messages();

    const stop = new AbortController();
    const first: string[] = [];
    const onConfirmed = async ({ messageIds: ids }: ConfirmedRecords) => {
      first.push(...ids);
      if (first.length === 2 * PUBLISH_CHUNK) stop.abort();
    };
    const error = await real
      .ingest({ ...streamOf(records).batch, onConfirmed, signal: stop.signal })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Interrupted);
    const { confirmed } = error as Interrupted;
    // Every chunk sent was confirmed and reported; none was left unconfirmed behind.
    expect(confirmed).toBe(first.length);
    expect(confirmed % PUBLISH_CHUNK).toBe(0);
    expect(confirmed).toBeGreaterThanOrEqual(2 * PUBLISH_CHUNK);
    expect(confirmed).toBeLessThan(records.length);
    expect(first).toEqual(expected.slice(0, confirmed));
    expect((await real.topology.messages()).map((m) => m.properties.messageId)).toEqual(first);

    const rest: string[] = [];
    const { batch, opened } = streamOf(records);
    const response = await real.ingest({
      ...batch,
      resumeAfter: confirmed,
      onConfirmed: async ({ messageIds: ids }) => void rest.push(...ids),
    });
    expect(opened.count).toBe(1);
    expect(response.recordCount).toBe(records.length);
    expect([...first, ...rest]).toEqual(expected);
    expect((await real.topology.messages()).map((m) => m.properties.messageId)).toEqual(rest);
    // Six chunks published twice to a quorum queue, each confirm after the broker's fsync: 15–30 s
    // while the rest of the suite runs beside it.
  }, 120_000);

  it('stopped in the validation pass: nothing published, nothing validated, the earlier point kept', async () => {
    const stop = new AbortController();
    stop.abort();
    let validated = false;
    const error = await real
      .ingest({
        ...streamOf(orders(3 * PUBLISH_CHUNK)).batch,
        signal: stop.signal,
        resumeAfter: PUBLISH_CHUNK,
        onValidated: async () => void (validated = true),
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Interrupted);
    expect((error as Interrupted).confirmed).toBe(PUBLISH_CHUNK);
    expect(validated).toBe(false);
    expect(await real.topology.count()).toBe(0);
  });

  it('a stop that comes after the last chunk was sent changes nothing: the batch is accepted', async () => {
    const stop = new AbortController();
    const response = await real.ingest({
      ...streamOf(orders(PUBLISH_CHUNK / 2)).batch,
      signal: stop.signal,
      onValidated: async () => stop.abort(),
    });
    expect(response.recordCount).toBe(PUBLISH_CHUNK / 2);
    expect(await real.topology.count()).toBe(PUBLISH_CHUNK / 2);
    await real.topology.messages();
  });
});
