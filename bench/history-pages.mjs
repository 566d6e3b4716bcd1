// npm run bench -- --only=pages: how long the partner API's history reads and the portal's pages
// take with a large history — 100,000 batches of one business (and their records, and events
// with attempts) beside another business's — on PostgreSQL and on the embedded store, through
// the real service (dist/cli.js serve) over HTTP; the portal signed in with a link, as a browser
// is. Prints p50, p99 and the slowest of each, next to the 200 ms a page may take. Knobs:
// BENCH_PAGES_BATCHES (100000), BENCH_PAGES_REQUESTS (40 per read).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, startService, stopServer } from './servers.mjs';
import { basicAuth } from './payloads.mjs';

const BATCHES = Number(process.env.BENCH_PAGES_BATCHES ?? 100_000);
const REQUESTS = Number(process.env.BENCH_PAGES_REQUESTS ?? 40);
const PAGE_BOUND_MS = 200;
const BUSINESS = 'ACME';
/** The portal's secret in the bench (production wants one); only for this run's service. */
const PORTAL_SECRET = 'bench-portal-secret-0123456789abcdef';
const API_KEY = 'bench-pages-key-8c1f2e';
const OTHER = 'GLOBEX';
/** Rows written per store.write: a few transactions, each well inside the writer's bounds. */
const CHUNK = 5000;

const dist = (file) => import(path.join(ROOT, 'dist', file));

/** 100k batches over the last 30 days, one in five refused; one record each; an event for one in ten. */
async function fill(store) {
  const now = Date.now();
  const span = 30 * 86_400_000;
  for (let from = 0; from < BATCHES; from += CHUNK) {
    const batches = [];
    const records = [];
    const events = [];
    const attempts = [];
    for (let i = from; i < Math.min(BATCHES, from + CHUNK); i++) {
      const at = new Date(now - span + Math.floor((span * i) / BATCHES));
      const refused = i % 5 === 0;
      const businessId = i % 10 === 9 ? OTHER : BUSINESS;
      const batch = {
        id: randomUUID(),
        correlationId: `bench-${i}`,
        businessId,
        source:
          i % 3 === 0
            ? { pipeline: 'acme-sftp', fileName: `orders-${i}.csv` }
            : { endpoint: '/api/v2/sales-orders' },
        kind: i % 4 === 0 ? 'purchase-orders' : 'sales-orders',
        recordCount: refused ? 0 : 1,
        outcome: refused ? 'rejected' : 'accepted',
        ...(refused && {
          problem: {
            type: '/problems/validation-failed',
            status: 400,
            errors: [{ index: 0, line: 2, errors: ['shipmentLines.0.quantity: Expected number'] }],
          },
        }),
        at,
      };
      batches.push(batch);
      if (refused) continue;
      const messageId = randomUUID();
      records.push({
        batchId: batch.id,
        first: 0,
        businessId,
        references: [`SO-${i}`],
        messageIds: [messageId],
        at,
      });
      if (i % 10 === 1) {
        const id = `evt-bench-${i}`;
        events.push({
          id,
          type: 'sales-order.shipped',
          businessId,
          payload: { orderNumber: `SO-${i}` },
          receivedAt: new Date(at.getTime() + 3_600_000),
          messageIds: [messageId],
        });
        attempts.push({
          id: randomUUID(),
          eventId: id,
          businessId,
          endpoint: 'erp',
          at: new Date(at.getTime() + 3_600_500),
          // One in seven fails: the overview's endpoint figures have something to count.
          end: i % 7 === 1 ? 'failed' : 'delivered',
          status: i % 7 === 1 ? 503 : 200,
          durationMs: 40,
        });
      }
    }
    await store.write({ batches, records, events, attempts });
  }
}

/**
 * The overview's three reads straight on the store, for a business and for the operator (every
 * business: the portal's operator view, which the HTTP run does not sign in as).
 */
async function timeOverviewReads(store) {
  const now = Date.now();
  const window = { since: new Date(now - 30 * 86_400_000), until: new Date(now + 1) };
  const lastDay = { since: new Date(now - 86_400_000), until: new Date(now + 1) };
  const rows = [];
  for (const [who, scope] of [
    ['business', { businessId: BUSINESS }],
    ['operator', { operator: true }],
  ]) {
    for (const [name, read] of [
      ['dailyBatches', () => store.dailyBatches(scope, window)],
      ['endpointDeliveries', () => store.endpointDeliveries(scope, lastDay)],
      ['latestFailures', () => store.latestFailures(scope, 5)],
    ]) {
      await read();
      const times = [];
      for (let i = 0; i < REQUESTS; i++) {
        const started = performance.now();
        await read();
        times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      rows.push({
        name: `store: ${name} (${who})`,
        p50: percentile(times, 50),
        p99: percentile(times, 99),
        max: times.at(-1),
      });
    }
  }
  return rows;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Signs in to the portal as a browser does (a link, Continue): the session's cookie. */
async function portalCookie(url) {
  const { signLink } = await dist('portal/links.js');
  const token = signLink(Buffer.from(PORTAL_SECRET), BUSINESS, Date.now() + 60_000);
  const response = await fetch(`${url}/portal/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }),
    redirect: 'manual',
  });
  if (response.status !== 303) throw new Error(`portal sign-in: ${response.status}`);
  return response.headers.get('set-cookie').split(';')[0];
}

/** Times `REQUESTS` sequential GETs of each read; a deep page follows `next` 50 pages down first. */
async function timeReads(url) {
  const authorization = basicAuth(BUSINESS, API_KEY);
  const cookie = await portalCookie(url);
  const get = async (route) => {
    const started = performance.now();
    const headers = route.startsWith('/portal') ? { cookie } : { authorization };
    const response = await fetch(url + route, { headers });
    const body = route.startsWith('/portal') ? await response.text() : await response.json();
    const ms = performance.now() - started;
    if (response.status !== 200)
      throw new Error(`GET ${route}: ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
    return { ms, body };
  };
  let deep = '/api/v2/batches?limit=25';
  for (let page = 0; page < 50; page++) {
    const { body } = await get(deep);
    deep = `/api/v2/batches?limit=25&cursor=${encodeURIComponent(body.next)}`;
  }
  const week = encodeURIComponent(new Date(Date.now() - 7 * 86_400_000).toISOString());
  const reads = [
    ['first page of batches', '/api/v2/batches'],
    ['the 51st page (cursor)', deep],
    ['refused batches of a kind', '/api/v2/batches?outcome=rejected&kind=purchase-orders'],
    ["a pipeline's batches, one week", `/api/v2/batches?source=acme-sftp&since=${week}`],
    ['one batch', '/api/v2/batches/bench-50001'],
    ['one record by its number', '/api/v2/records/sales-orders/SO-50001'],
    ['first page of events', '/api/v2/events'],
    ['portal: overview (first page)', '/portal'],
    ['portal: batches page', '/portal/batches'],
    ['portal: refused batches of a kind', '/portal/batches?outcome=rejected&kind=purchase-orders'],
    ['portal: one refused batch', '/portal/batches/bench-50000'],
    ['portal: one accepted batch', '/portal/batches/bench-50001'],
    ['portal: an event', '/portal/events/evt-bench-50001'],
    ['portal: a record', '/portal/records?kind=sales-orders&key=SO-50001'],
    ['portal: events page', '/portal/events'],
  ];
  const rows = [];
  for (const [name, route] of reads) {
    await get(route); // warm: the plan cached, the pages read once
    const times = [];
    for (let i = 0; i < REQUESTS; i++) times.push((await get(route)).ms);
    times.sort((a, b) => a - b);
    rows.push({ name, p50: percentile(times, 50), p99: percentile(times, 99), max: times.at(-1) });
  }
  return rows;
}

function print(store, rows, fillSeconds) {
  console.log(
    `\n${store}: ${BATCHES.toLocaleString('en')} batches (90% one business's), filled in ${fillSeconds.toFixed(1)} s`,
  );
  console.log(
    '  read                                  p50 ms   p99 ms   max ms   (a page may take 200 ms)',
  );
  for (const row of rows)
    console.log(
      `  ${row.name.padEnd(36)} ${row.p50.toFixed(1).padStart(7)}  ${row.p99.toFixed(1).padStart(7)}  ${row.max.toFixed(1).padStart(7)}   ${row.max <= PAGE_BOUND_MS ? 'within' : 'OVER'}`,
    );
}

async function measure(store, historyEnv, amqpUrl) {
  const server = await startService({
    amqpUrl,
    exchange: `bench.pages.${process.pid}`,
    queue: `bench.pages.${process.pid}`,
    businessId: BUSINESS,
    apiKey: API_KEY,
    env: {
      INGEST_HISTORY__ENABLED: 'true',
      INGEST_PORTAL__ENABLED: 'true',
      INGEST_PORTAL__SECRET: JSON.stringify({ env: 'BENCH_PORTAL_SECRET' }),
      BENCH_PORTAL_SECRET: PORTAL_SECRET,
      ...historyEnv,
    },
    name: `service (${store})`,
  });
  try {
    return await timeReads(server.url);
  } finally {
    await stopServer(server);
  }
}

export async function runPagesBench({ amqpUrl }) {
  const results = {};
  // PostgreSQL: a database of the run's own on the local server.
  const database = `bench_pages_${process.pid}`;
  const psql = (sql) =>
    execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-qc', sql], { stdio: 'pipe' });
  psql(`create database ${database}`);
  const psqlOn = (db, sql) =>
    execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', db, '-qc', sql], {
      stdio: 'pipe',
    });
  const url = `postgres://postgres@127.0.0.1:5432/${database}`;
  try {
    const { createPostgresHistory } = await dist('history/postgres/index.js');
    const store = createPostgresHistory({ url });
    await store.open();
    let started = performance.now();
    await fill(store);
    const fillSeconds = (performance.now() - started) / 1000;
    // As a fleet's database would be: its statistics current (autovacuum's analyze, done now).
    psqlOn(database, 'vacuum analyze');
    const direct = await timeOverviewReads(store);
    await store.close();
    started = performance.now();
    results.postgres = [...(await measure('PostgreSQL', { HISTORY_URL: url }, amqpUrl)), ...direct];
    print('PostgreSQL', results.postgres, fillSeconds);
  } finally {
    psql(`drop database if exists ${database} with (force)`);
  }
  // Embedded: the folder filled first, then opened by the service.
  const folder = mkdtempSync(path.join(tmpdir(), 'bench-pages-'));
  try {
    const { createEmbeddedHistory } = await dist('history/embedded/index.js');
    const store = createEmbeddedHistory({ directory: folder });
    await store.open();
    const started = performance.now();
    await fill(store);
    const fillSeconds = (performance.now() - started) / 1000;
    const direct = await timeOverviewReads(store);
    await store.close();
    results.embedded = [
      ...(await measure('embedded', { INGEST_HISTORY__DIRECTORY: folder }, amqpUrl)),
      ...direct,
    ];
    print('embedded', results.embedded, fillSeconds);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
  return results;
}
