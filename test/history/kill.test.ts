/**
 * `serve` killed with SIGKILL while batches arrive and its history writes — to PostgreSQL, and to
 * the embedded store in its data directory. What a `202` promised is in the broker, every record
 * of it; the history may miss only what its writer had not written yet — the batches answered
 * within about one flush interval (and a write) of the kill — which the test counts and prints.
 * A fresh instance then starts on the same history and data directory (a dead holder's lock and
 * socket taken over) and reads and writes it.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { hashApiKey } from '../../src/api-keys.js';
import { loadConfig } from '../../src/config.js';
import { AMQP_URL, declareTestTopology, type TestTopology } from '../support/broker.js';
import { killIfRunning, startServe, stopCli, type CliWorker } from '../support/cli-worker.js';
import { basicAuth } from '../support/http-app.js';
import { freshDatabase } from '../support/postgres.js';
import { drainQueue } from '../support/queue-audit.js';
import { tempFolder } from '../support/temp.js';
import { validRecords } from '../records/fixtures.js';

const ACME = { businessId: 'ACME', apiKey: 'acme-history-kill-key-5a0c7e' };
const CLIENTS = 4;
const RECORDS_PER_BATCH = 2;
/** Batches answered 202 before the kill, at least: the load lasts over many of the writer's flushes. */
const BEFORE_KILL = 300;

interface Answered {
  readonly correlationId: string;
  readonly messageIds: string[];
  /** performance.now() when the 202 arrived. */
  readonly at: number;
}

const [order] = validRecords('sales-orders');
function batch(tag: string): string {
  const text = JSON.stringify(order);
  return `[${Array.from({ length: RECORDS_PER_BATCH }, (_, i) =>
    text.replaceAll('"SO-2026-000187"', `"${tag}-${i}"`),
  ).join(',')}]`;
}

const post = (url: string, body: string) =>
  fetch(`${url}/api/v2/sales-orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: basicAuth(ACME) },
    body,
    signal: AbortSignal.timeout(30_000),
  });

/** The partner API's answer for one batch: its message ids when the history has it, else undefined. */
async function keptBy(url: string, correlationId: string): Promise<string[] | undefined> {
  const response = await fetch(`${url}/api/v2/batches/${correlationId}`, {
    headers: { authorization: basicAuth(ACME) },
  });
  if (response.status === 404) return undefined;
  expect(response.status, await response.clone().text()).toBe(200);
  return ((await response.json()) as { messageIds: string[] }).messageIds;
}

/**
 * One client: posts small batches one after another, each the same body again after a 503 or
 * a 429 until it is answered 202, and stops at the first request that gets no answer (the kill).
 */
async function client(url: string, tag: string, answered: Answered[]): Promise<void> {
  for (let b = 0; ; b++) {
    const body = batch(`${tag}-${b}`);
    for (;;) {
      const response = await post(url, body).catch(() => undefined);
      const text = await response?.text().catch(() => undefined);
      if (!response || text === undefined) return;
      if (response.status === 202) {
        const { correlationId, messageIds } = JSON.parse(text) as Answered;
        answered.push({ correlationId, messageIds, at: performance.now() });
        break;
      }
      if (response.status !== 503 && response.status !== 429)
        throw new Error(`unexpected ${response.status} for a valid batch: ${text.slice(0, 300)}`);
    }
  }
}

describe.each([
  { store: 'PostgreSQL', postgres: true },
  { store: 'embedded', postgres: false },
])('serve killed with SIGKILL while the $store history writes', ({ store, postgres }) => {
  const temp = tempFolder(`history-kill-${postgres ? 'pg' : 'embedded'}-`);
  let database: Awaited<ReturnType<typeof freshDatabase>> | undefined;
  let topology: TestTopology;
  let config: string;
  const services: CliWorker[] = [];

  beforeAll(async () => {
    if (postgres) database = await freshDatabase('kill');
    topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'history-kill' });
    const pipelines = path.join(temp.dir, 'pipelines');
    mkdirSync(pipelines);
    // The writer's own settings (flushMs, maxPendingRows) are left at their defaults: the bound
    // below is derived from them as loaded.
    config = temp.write(
      'config.yaml',
      stringify({
        environment: 'production',
        dataDirectory: path.join(temp.dir, 'data'),
        pipelinesDirectory: pipelines,
        tenants: [{ businessId: ACME.businessId, apiKeyHash: await hashApiKey(ACME.apiKey) }],
        http: {
          abuse: { rateLimit: { requests: 100_000, windowSeconds: 60 }, maxInFlightBatches: 16 },
        },
        broker: {
          exchange: topology.exchange,
          queues: [{ name: topology.queue, bindingKeys: ['#'] }],
        },
        history: { enabled: true, ...(database && { url: database.url }) },
      }),
    );
  });

  afterAll(async () => {
    for (const service of services) killIfRunning(service);
    await topology?.cleanup();
    await database?.drop();
  });

  it('loses nothing from the broker, and from the history at most the unwritten window', async () => {
    const { flushMs, maxPendingRows } = loadConfig({
      env: { INGEST_CONFIG: config, AMQP_URL },
    }).history;
    const first = await startServe(config, { AMQP_URL });
    services.push(first.service);

    const answered: Answered[] = [];
    const tag = `SO-KILL-${postgres ? 'PG' : 'EM'}`;
    const clients = Array.from({ length: CLIENTS }, (_, n) =>
      client(first.url, `${tag}-${n}`, answered),
    );
    // Killed mid-load, once the writer keeps up (the newest batch answered is read back: the
    // embedded store's start-up backlog is written) and some more batches have come since.
    // How long a 202 takes to reach the history here (the longest seen): on a loaded machine a
    // write takes longer, and the window a kill may lose grows with it.
    let lag = 0;
    await expect
      .poll(
        async () => {
          const newest = answered.at(-1);
          if (answered.length < BEFORE_KILL || !newest) return false;
          if ((await keptBy(first.url, newest.correlationId)) === undefined) return false;
          lag = performance.now() - newest.at;
          return true;
        },
        { timeout: 60_000, interval: 20, message: first.service.stderr() },
      )
      .toBe(true);
    const caughtUp = answered.length;
    // Meanwhile, batch after batch, how long a 202 takes to reach the history: the longest is
    // the writer's wait plus its slowest write on this machine as it is now.
    let sampling = true;
    const sampled = (async () => {
      while (sampling) {
        const newest = answered.at(-1)!;
        while (sampling && (await keptBy(first.url, newest.correlationId)) === undefined)
          await new Promise((resolve) => setTimeout(resolve, 10));
        if (sampling) lag = Math.max(lag, performance.now() - newest.at);
      }
    })();
    await expect
      .poll(() => answered.length, { timeout: 30_000, interval: 5 })
      .toBeGreaterThanOrEqual(caughtUp + 10 * CLIENTS);
    sampling = false;
    await sampled;
    const killedAt = performance.now();
    first.service.child.kill('SIGKILL');
    await first.service.exited;
    await Promise.all(clients);

    // The broker: every record of every 202 is there.
    const queued = new Set((await drainQueue(AMQP_URL, topology.queue)).map((m) => m.messageId));
    const promised = answered.flatMap((a) => a.messageIds);
    expect(promised).toHaveLength(answered.length * RECORDS_PER_BATCH);
    expect(promised.filter((id) => !queued.has(id))).toEqual([]);

    // A fresh instance on the same history and data directory starts, and reads the history.
    const fresh = await startServe(config, { AMQP_URL });
    services.push(fresh.service);
    const missing: Answered[] = [];
    for (const a of answered) {
      const kept = await keptBy(fresh.url, a.correlationId);
      // A batch the history has, it has whole: the batch and its records in one transaction.
      if (kept) expect(kept).toEqual(a.messageIds);
      else missing.push(a);
    }

    // The writer takes what is queued every flushMs; a kill loses what waits and the write in
    // flight, so every batch missing was answered within about two flush intervals of the kill —
    // or the longest answer-to-history time seen here and one more wait, when the machine makes
    // writes slower.
    const window = Math.max(2 * flushMs, lag + flushMs);
    const inWindow = answered.filter((a) => a.at > killedAt - window);
    const oldest = Math.max(0, ...missing.map((a) => Math.round(killedAt - a.at)));
    console.log(
      `kill -9 under load (${store}): ${answered.length} batches answered 202, ${missing.length} missing from the history, ` +
        `the oldest answered ${oldest} ms before the kill (flushMs ${flushMs}, a 202 in the history after ${Math.round(lag)} ms: ${inWindow.length} answered in the last ${Math.round(window)} ms; ` +
        `maxPendingRows ${maxPendingRows}); 0 missing from the broker`,
    );
    expect(
      missing.filter((a) => a.at <= killedAt - window).map((a) => Math.round(killedAt - a.at)),
      'ms before the kill that missing batches were answered',
    ).toEqual([]);
    expect(missing.length).toBeLessThanOrEqual(inWindow.length);
    expect(missing.length * (1 + RECORDS_PER_BATCH)).toBeLessThanOrEqual(maxPendingRows);

    // And the fresh instance writes to it as before.
    const after = await post(fresh.url, batch(`${tag}-AFTER`));
    expect(after.status).toBe(202);
    const { correlationId, messageIds } = (await after.json()) as Answered;
    await expect
      .poll(() => keptBy(fresh.url, correlationId), { timeout: 15_000, interval: 50 })
      .toEqual(messageIds);
    expect((await stopCli(fresh.service, 'SIGTERM')).exit).toBe('code 0');
  }, 180_000);
});
