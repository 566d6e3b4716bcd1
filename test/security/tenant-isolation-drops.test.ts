/**
 * Tenant isolation for file drops: a drop is bound to one business (`businessId` in its pipeline
 * file) and has no credentials of its own, so a file holding another business's records must be
 * refused whole — every kind, every format — with a failure receipt, and nothing published.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createIngest } from '../../src/ingest/flow.js';
import type { Receipt } from '../../src/drops/receipts.js';
import { compileRoutingKey } from '../../src/ingest/route.js';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createRabbitMqPublisher, type RabbitMqPublisher } from '../../src/publish/index.js';
import { KINDS } from '../../src/records/index.js';
import { KIND_NAMES, type KindName } from '../../src/records/kind.js';
import type { OnboardingProfiles } from '../../src/records/legacy/index.js';
import { createDropRunner } from '../../src/drops/runner.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { validRecords } from '../records/fixtures.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { v1Csv, v1Json, v1Profile } from '../support/hostile-input.js';
import { tempFolder } from '../support/temp.js';

const log = createLogger({ level: 'silent' });
const temp = tempFolder('tenant-drops-');
const onboarding = {
  ACME: Object.fromEntries(KIND_NAMES.map((kind) => [kind, v1Profile(kind)])),
} as OnboardingProfiles;
let topology: TestTopology;
let publisher: RabbitMqPublisher;

beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'] });
  publisher = createRabbitMqPublisher(
    { url: AMQP_URL, exchange: topology.exchange, queues: [] },
    log,
  );
  await publisher.start();
});
afterAll(async () => {
  await publisher.close();
  await topology.cleanup();
});

/** The file's content for a drop bound to ACME, but carrying OTHER's records. */
function foreignFile(kind: KindName, format: 'v2-json' | 'v1-json' | 'v1-csv'): string {
  if (format === 'v1-csv') return v1Csv(kind).replaceAll('ACME', 'OTHER');
  if (format === 'v1-json') return JSON.stringify(v1Json(kind)).replaceAll('"ACME"', '"OTHER"');
  const records = validRecords(kind).map((record) => {
    const copy = structuredClone(record) as Record<string, unknown>;
    let at = copy;
    const keys = KINDS[kind].businessIdPath;
    for (const key of keys.slice(0, -1)) at = at[key] as Record<string, unknown>;
    at[keys[keys.length - 1]!] = 'OTHER';
    return copy;
  });
  return JSON.stringify(records);
}

describe.each(KIND_NAMES)('a drop bound to ACME: %s', (kind) => {
  it.each(['v2-json', 'v1-json', 'v1-csv'] as const)(
    'refuses a %s file of another business whole, with a failure receipt',
    async (format) => {
      const dir = path.join(temp.dir, `${kind}-${format}`);
      const name = `foreign.${format === 'v1-csv' ? 'csv' : 'json'}`;
      const store = createLocalDrop({ path: dir });
      await store.write(name, foreignFile(kind, format));
      const pipeline = pipelineSchema.parse({
        name: `tenancy-${kind}-${format}`,
        businessId: 'ACME',
        kind,
        format,
        source: { type: 'local', path: dir },
        readiness: { strategy: 'rename' },
      });
      const ingest = createIngest({
        publisher,
        routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
      });
      const runner = createDropRunner({
        pipeline,
        store,
        ingest,
        onboarding,
        log,
        spoolDirectory: path.join(temp.dir, 'spool'),
      });
      expect(await runner.runOnce()).toMatchObject({ accepted: 0, rejected: 1, retried: 0 });
      const receipt = JSON.parse(
        readFileSync(path.join(dir, 'failed', `${name}.receipt.json`), 'utf8'),
      ) as Receipt;
      expect(receipt).toMatchObject({
        outcome: 'rejected',
        businessId: 'ACME',
        response: { status: 400 },
      });
      expect(JSON.stringify(receipt.response)).toMatch(/business/i);
      expect(await topology.count()).toBe(0);
    },
  );

  it('accepts the same files for ACME itself (the refusals above are about the business, not the file)', async () => {
    const dir = path.join(temp.dir, `${kind}-own`);
    const store = createLocalDrop({ path: dir });
    await store.write('own.csv', foreignFile(kind, 'v1-csv').replaceAll('OTHER', 'ACME'));
    const pipeline = pipelineSchema.parse({
      name: `tenancy-${kind}-own`,
      businessId: 'ACME',
      kind,
      format: 'v1-csv',
      source: { type: 'local', path: dir },
      readiness: { strategy: 'rename' },
    });
    const ingest = createIngest({
      publisher,
      routingKeyFor: compileRoutingKey('{kind}.{businessId}'),
    });
    const runner = createDropRunner({
      pipeline,
      store,
      ingest,
      onboarding,
      log,
      spoolDirectory: path.join(temp.dir, 'spool'),
    });
    expect(await runner.runOnce()).toMatchObject({ accepted: 1, rejected: 0 });
    expect(await topology.count()).toBeGreaterThan(0);
    await topology.messages();
  });
});
