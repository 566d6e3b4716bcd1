import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pipelineSchema } from '../../src/drops/definition.js';
import { createDropRunner } from '../../src/drops/runner.js';
import { createLocalDrop } from '../../src/stores/local/index.js';
import { createLogger } from '../../src/log.js';
import { createIngest } from '../../src/ingest/flow.js';
import { createNonePublisher } from '../../src/publish/index.js';
import { validRecords } from '../records/fixtures.js';
import { tempFolder } from '../support/temp.js';

/**
 * The sandbox creates nothing, so a file whose records all pass must not get a receipt that reads
 * like a production acceptance (hardening issue, contract decisions).
 */
const temp = tempFolder('sandbox-drop-');

function runnerFor(environment: 'sandbox' | 'production', dir: string) {
  return createDropRunner({
    pipeline: pipelineSchema.parse({
      name: `drop-${environment}`,
      businessId: 'ACME',
      kind: 'sales-orders',
      format: 'v2-json',
      source: { type: 'local', path: dir },
      readiness: { strategy: 'rename' },
    }),
    store: createLocalDrop({ path: dir }),
    ingest: createIngest({ publisher: createNonePublisher(), routingKeyFor: () => 'x' }),
    onboarding: {},
    environment,
    log: createLogger({ level: 'silent' }),
    spoolDirectory: path.join(temp.dir, `spool-${environment}`),
  });
}

describe('a dropped file in the sandbox', () => {
  it('gets a receipt that says validated and sandbox, never accepted', async () => {
    const dir = path.join(temp.dir, 'sandbox');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'orders.json'), JSON.stringify(validRecords('sales-orders')));
    const runner = runnerFor('sandbox', dir);
    expect(await runner.runOnce()).toMatchObject({ accepted: 0, validated: 1 });
    await runner.stop();
    const receipt = JSON.parse(
      readFileSync(path.join(dir, 'processed', 'orders.json.receipt.json'), 'utf8'),
    ) as Record<string, unknown>;
    expect(receipt).toMatchObject({ outcome: 'validated', environment: 'sandbox' });
  });

  it('says its environment in production too', async () => {
    const dir = path.join(temp.dir, 'production');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'orders.json'), JSON.stringify(validRecords('sales-orders')));
    const runner = runnerFor('production', dir);
    expect(await runner.runOnce()).toMatchObject({ accepted: 1, validated: 0 });
    await runner.stop();
    const receipt = JSON.parse(
      readFileSync(path.join(dir, 'processed', 'orders.json.receipt.json'), 'utf8'),
    ) as Record<string, unknown>;
    expect(receipt).toMatchObject({ outcome: 'accepted', environment: 'production' });
  });
});
