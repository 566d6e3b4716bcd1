import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Receipt } from '../../src/drops/receipts.js';
import { AMQP_URL } from '../support/broker.js';
import { startCliWorker, stopCli, useWorkerProcesses } from '../support/cli-worker.js';
import { auditQueue, drainQueue } from '../support/queue-audit.js';
import { tempFolder } from '../support/temp.js';
import { ordersCsv } from '../drops/stores/drop-contract.js';

/**
 * `warehouse-ingest run <pipeline>` worker processes on one local drop, each SIGKILLed at a
 * random moment while it works, then one left to finish. Whatever the kills interrupted (a
 * claim, a publish, a receipt, a move), every file must end with exactly one receipt, and no
 * record may reach the queue under two ids.
 */
const VALID_FILES = 150;
const INVALID_FILES = 4;
const ORDERS_PER_FILE = 5;
const KILLS = 5;
/** The shortest lease allowed: a killed worker's claim is taken over after it. */
const LEASE_MS = 10_000;

const SETTLED = [
  'file accepted',
  'file rejected',
  'receipt completed',
  'duplicate of an accepted file: not published again',
];
const TOOK_OVER = 'took over a claim whose worker did not finish within the lease';
const shipmentIdOf = (body: string) =>
  (JSON.parse(body) as { identifiers: { shipmentId: string } }).identifiers.shipmentId;

/** Every receipt in the drop's final folders, with where it lies. */
function receiptsIn(drop: string): Array<{ folder: string; receipt: Receipt }> {
  const found: Array<{ folder: string; receipt: Receipt }> = [];
  for (const folder of ['processed', 'failed']) {
    const dir = path.join(drop, folder);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.receipt.json'))) {
      found.push({
        folder,
        receipt: JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as Receipt,
      });
    }
  }
  return found;
}

const inputsLeft = (drop: string) =>
  readdirSync(drop, { withFileTypes: true }).filter((e) => e.isFile() && !e.name.startsWith('.'))
    .length;
const claimsIn = (drop: string) => {
  const dir = path.join(drop, '.warehouse-ingest', 'claims');
  return existsSync(dir) ? readdirSync(dir) : [];
};
const claimsLeft = (drop: string) => claimsIn(drop).length;

describe('worker killed while it works', () => {
  const processes = useWorkerProcesses('faults');
  const { workers } = processes;

  it('every file ends with one receipt, no claim stays stuck, no record under two ids', async () => {
    const temp = tempFolder('worker-killed-');
    const drop = path.join(temp.dir, 'drop');
    mkdirSync(drop);
    const tag = Date.now().toString(36);
    const valid = Array.from(
      { length: VALID_FILES },
      (_, i) => `orders-${String(i).padStart(3, '0')}.csv`,
    );
    const invalid = Array.from({ length: INVALID_FILES }, (_, i) => `broken-${i}.csv`);
    for (const [i, name] of valid.entries())
      writeFileSync(
        path.join(drop, name),
        ordersCsv(`K${tag}-${i}`, ORDERS_PER_FILE).replaceAll('ACME,', 'DEMO,'),
      );
    for (const [i, name] of invalid.entries())
      writeFileSync(path.join(drop, name), `not,a,legacy,file\n${i},2,3,4\n`);
    const pipeline = temp.write(
      'killed.yaml',
      [
        'name: killed-drop',
        'businessId: DEMO',
        'kind: sales-orders',
        'format: v1-csv',
        `source: { type: local, path: ${drop} }`,
        'readiness: { strategy: rename }',
        'schedule: { pollIntervalMs: 200 }',
        `claimLeaseMs: ${LEASE_MS}`,
        '',
      ].join('\n'),
    );
    const config = temp.write(
      'config.yaml',
      `dataDirectory: ${temp.dir}/data\nbroker:\n  exchange: ${processes.topology.exchange}\n  queues: []\n`,
    );
    const env = { INGEST_CONFIG: config, AMQP_URL };

    const kills: string[] = [];
    /** Claim names (`<at>~<worker>~<file>`, unique per claim) found after a kill: each must be taken over once. */
    const abandoned = new Set<string>();
    for (let k = 1; k <= KILLS; k++) {
      const worker = startCliWorker(pipeline, env);
      workers.push(worker);
      // Mid-work, not while starting: after a random number of files this worker settled, then a random moment.
      const settledFirst = 1 + Math.floor(Math.random() * 4);
      await expect
        .poll(() => SETTLED.reduce((sum, m) => sum + worker.count(m), 0), {
          timeout: 30_000,
          interval: 5,
          message: `worker ${k} settled too few files: ${worker.stderr()}`,
        })
        .toBeGreaterThanOrEqual(settledFirst);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 100)); // the random moment (bounded)
      // Every other kill lands while a file is claimed, so abandoned claims (and the lease) are always exercised.
      if (k % 2 === 0)
        await expect
          .poll(() => claimsLeft(drop), { timeout: 10_000, interval: 2 })
          .toBeGreaterThan(0);
      expect(inputsLeft(drop) + claimsLeft(drop), `work left for kill ${k}`).toBeGreaterThan(0);
      const { exit } = await stopCli(worker, 'SIGKILL');
      for (const name of claimsIn(drop)) abandoned.add(name);
      kills.push(
        `${exit} after ${SETTLED.reduce((sum, m) => sum + worker.count(m), 0)} files, ${claimsLeft(drop)} claim(s) left`,
      );
    }

    const last = startCliWorker(pipeline, env);
    workers.push(last);
    // Until every file is settled; a second receipt for a file shows below, named by file.
    await expect
      .poll(
        () => ({
          inputs: inputsLeft(drop),
          claims: claimsLeft(drop),
          settled: receiptsIn(drop).length >= VALID_FILES + INVALID_FILES,
        }),
        { timeout: 60_000, interval: 100 },
      )
      .toEqual({ inputs: 0, claims: 0, settled: true });
    expect((await stopCli(last, 'SIGTERM')).exit).toBe('code 0');

    const receipts = receiptsIn(drop);
    // What the kills left lying around: half-written temporary files and spooled copies.
    const debris = ['processed', 'failed', '.warehouse-ingest/state']
      .flatMap((folder) =>
        existsSync(path.join(drop, folder))
          ? readdirSync(path.join(drop, folder)).map((n) => `${folder}/${n}`)
          : [],
      )
      .filter((n) => n.endsWith('.tmp'));
    const spooled = existsSync(path.join(temp.dir, 'data', 'spool'))
      ? readdirSync(path.join(temp.dir, 'data', 'spool'))
      : [];
    const audit = auditQueue(await drainQueue(AMQP_URL, processes.topology.queue), shipmentIdOf);
    const accepted = receipts.filter((r) => r.receipt.outcome === 'accepted');
    const recordsAccepted = accepted.reduce(
      (sum, r) => sum + (r.receipt.response as { recordCount: number }).recordCount,
      0,
    );
    const takeOvers = workers.reduce((sum, w) => sum + w.count(TOOK_OVER), 0);
    console.log(
      `[faults] worker killed: kills ${kills.length} (${kills.join('; ')}); claims abandoned by the kills ${abandoned.size}, taken over after the lease ${takeOvers}; ` +
        `files ${VALID_FILES + INVALID_FILES} (${accepted.length} accepted, ${receipts.length - accepted.length} not), ` +
        `records accepted ${recordsAccepted}, in the queue ${audit.messages} (${audit.distinctIds} distinct ids), duplicates ${audit.duplicates}; left behind: ${debris.length} temporary file(s) ${JSON.stringify(debris)}, ${spooled.length} spooled copies`,
    );

    // One final receipt per file, with the right outcome, and the file itself next to it.
    const byFile = new Map<string, Array<{ folder: string; receipt: Receipt }>>();
    for (const r of receipts)
      byFile.set(r.receipt.file.name, [...(byFile.get(r.receipt.file.name) ?? []), r]);
    /** What the workers logged about a file, for the failure message of a file settled wrongly. */
    const storyOf = (name: string) =>
      workers
        .map((w, i) =>
          w.lines
            .filter((line) => JSON.stringify(line).includes(name))
            .map((line) => `worker ${i + 1}: ${JSON.stringify(line)}`)
            .join('\n'),
        )
        .join('\n');
    const settledAs = (name: string, expected: string) => {
      const found = byFile.get(name)?.map((r) => `${r.folder}:${r.receipt.outcome}`) ?? [];
      const ok = found.length === 1 && found[0] === expected;
      expect(found, ok ? name : `${name}\n${storyOf(name)}`).toEqual([expected]);
    };
    for (const name of valid) settledAs(name, 'processed:accepted');
    for (const name of invalid) settledAs(name, 'failed:rejected');
    expect(
      readdirSync(path.join(drop, 'processed'))
        .filter((n) => !n.endsWith('.receipt.json') && !n.endsWith('.tmp'))
        .sort(),
    ).toEqual(valid);
    expect(
      readdirSync(path.join(drop, 'failed'))
        .filter((n) => !n.endsWith('.receipt.json') && !n.endsWith('.tmp'))
        .sort(),
    ).toEqual(invalid.sort());

    // Nothing lost: every accepted record is in the queue under the id its receipt names …
    const missing = accepted.flatMap((r) =>
      (r.receipt.response as { messageIds: string[] }).messageIds.filter(
        (id) => !audit.bodyOf.has(id),
      ),
    );
    expect(missing, 'ids named by receipts but not in the queue').toEqual([]);
    expect(recordsAccepted).toBe(VALID_FILES * ORDERS_PER_FILE);
    // … and a record published twice (a kill between confirm and state) kept its id.
    expect(audit.distinctIds).toBe(recordsAccepted);
    expect(audit.recordsUnderSeveralIds).toEqual([]);
    expect(kills).toHaveLength(KILLS);
    // Each abandoned claim was taken over once, by a later worker, after the lease.
    expect(abandoned.size).toBeGreaterThan(0);
    // A killed worker's spooled copy (as large as its input) does not stay on disk for good.
    expect(spooled, 'spooled copies of killed workers').toEqual([]);
    expect(takeOvers).toBe(abandoned.size);
  }, 150_000);
});
