import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pipelineSchema } from '../../../src/drops/definition.js';
import { createDropRunner, type DropRunner } from '../../../src/drops/runner.js';
import { createLocalDrop, type LocalDropOptions } from '../../../src/stores/local/index.js';
import { createLogger } from '../../../src/log.js';
import { createIngest } from '../../../src/ingest/flow.js';
import { createNonePublisher } from '../../../src/publish/index.js';
import { tempFolder } from '../../support/temp.js';
import { ordersCsv, PROFILE } from './drop-contract.js';

/**
 * Local drops are watched (chokidar): a file renamed into the drop is looked at at once, not at the
 * next poll. The poll interval here is ten minutes, so only the watcher can explain a pick-up.
 */
const runners: DropRunner[] = [];
afterEach(async () => {
  await Promise.all(runners.splice(0).map((runner) => runner.stop()));
});

function startWatched(name: string, store: Partial<LocalDropOptions> = {}) {
  const dir = tempFolder(`watch-${name}-`).dir;
  const pipeline = pipelineSchema.parse({
    name,
    businessId: 'ACME',
    kind: 'sales-orders',
    format: 'v1-csv',
    source: { type: 'local', path: dir },
    readiness: { strategy: 'rename' },
    schedule: { pollIntervalMs: 600_000 },
  });
  const runner = createDropRunner({
    pipeline,
    store: createLocalDrop({ path: dir, ...store }),
    ingest: createIngest({ publisher: createNonePublisher(), routingKeyFor: () => 'x' }),
    onboarding: { ACME: { 'sales-orders': PROFILE } },
    log: createLogger({ level: 'silent' }),
    spoolDirectory: `${dir}-spool`,
  });
  runners.push(runner);
  runner.start();
  return { dir, receipt: (file: string) => path.join(dir, 'processed', `${file}.receipt.json`) };
}

/** Writes under a temporary name, then renames: what a partner's upload tool does. */
function upload(dir: string, name: string, content: string): void {
  writeFileSync(path.join(dir, `${name}.part`), content);
  renameSync(path.join(dir, `${name}.part`), path.join(dir, name));
}

describe('local drop: the watcher', () => {
  it('picks up a renamed file at once, without waiting for the poll interval', async () => {
    const { dir, receipt } = startWatched('watched');
    upload(dir, 'first.csv', ordersCsv('W1'));
    await expect.poll(() => existsSync(receipt('first.csv')), { timeout: 10_000 }).toBe(true);
    // Files written in the worker's own folders trigger nothing; a later upload still does.
    mkdirSync(path.join(dir, 'processed'), { recursive: true });
    writeFileSync(path.join(dir, 'processed', 'elsewhere.csv'), ordersCsv('W0'));
    upload(dir, 'second.csv', ordersCsv('W2'));
    await expect.poll(() => existsSync(receipt('second.csv')), { timeout: 10_000 }).toBe(true);
    expect(existsSync(path.join(dir, 'processed', 'elsewhere.csv.receipt.json'))).toBe(false);
  });

  it('usePolling (network mounts) picks up a renamed file without file events', async () => {
    const { dir, receipt } = startWatched('polled', { usePolling: true, pollingIntervalMs: 100 });
    upload(dir, 'first.csv', ordersCsv('WP1')); // the first look, at start, may take this one
    await expect.poll(() => existsSync(receipt('first.csv')), { timeout: 10_000 }).toBe(true);
    upload(dir, 'second.csv', ordersCsv('WP2')); // only the watcher can explain this one
    await expect.poll(() => existsSync(receipt('second.csv')), { timeout: 10_000 }).toBe(true);
  });
});
