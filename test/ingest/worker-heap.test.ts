/**
 * `npm start` runs node with `--max-semi-space-size=32`; V8's flag wins over a worker's
 * `resourceLimits`, so without `workersOwnYoungGeneration()` each worker thread (the drop's two
 * validating halves, the embedded history's writer) grew a 32 MiB semi-space of its own: 354 MiB
 * peak on a 400k-line CSV drop under `serve`, 215 with it. A child under that flag starts a worker
 * limited to a 4 MiB young generation which allocates short-lived garbage and reports the largest
 * new space it saw; the control without the call shows the flag winning.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const MODULE = new URL('../../src/worker-heap.ts', import.meta.url).href;

/** The worker: ~200 MiB of short-lived small arrays, the new space's largest size, in MiB. */
const WORKER = `
  const { getHeapSpaceStatistics } = process.getBuiltinModule('node:v8');
  const { parentPort } = process.getBuiltinModule('node:worker_threads');
  let largest = 0;
  // A ring of recent arrays: young objects that survive a scavenge or two make V8 grow the nursery.
  const ring = new Array(20_000);
  for (let i = 0; i < 400_000; i++) {
    ring[i % ring.length] = new Array(64).fill(i);
    if (i % 1000 === 0) {
      const space = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
      largest = Math.max(largest, space.space_size);
    }
  }
  parentPort.postMessage(largest / 1048576 + (ring.length > 0 ? 0 : 1));
`;

async function newSpaceMiB(fixed: boolean): Promise<number> {
  const script = `
    import { Worker } from 'node:worker_threads';
    const { workersOwnYoungGeneration } = await import(${JSON.stringify(MODULE)});
    if (${fixed}) workersOwnYoungGeneration();
    const worker = new Worker(${JSON.stringify(WORKER)}, {
      eval: true,
      resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 96 },
    });
    worker.once('message', (mib) => { console.log(mib); process.exit(0); });
    worker.once('error', (error) => { console.error(error); process.exit(1); });
  `;
  const { stdout } = await run(
    process.execPath,
    ['--max-semi-space-size=32', '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: new URL('../..', import.meta.url).pathname },
  );
  return Number(stdout.trim());
}

describe('worker threads under npm start’s --max-semi-space-size', () => {
  it('keep the young generation their resourceLimits give them', async () => {
    // 4 MiB young generation: semi-spaces of at most ~1.3 MiB each.
    expect(await newSpaceMiB(true)).toBeLessThanOrEqual(4); // 4 here
  });

  it('grow the flag’s 32 MiB semi-spaces without it (the flag wins over resourceLimits)', async () => {
    expect(await newSpaceMiB(false)).toBeGreaterThan(16); // 64 here
  });
});
