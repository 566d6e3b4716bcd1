/**
 * ops/grafana-dashboard.json and ops/alerts.yaml against a running service: every metric they
 * name is exported on the admin listener's /metrics (the events half's included), so a rename
 * cannot leave a dashboard panel empty or an alert that never fires.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse, stringify } from 'yaml';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { AMQP_URL, declareTestTopology, type TestTopology, uniqueName } from '../support/broker.js';
import { deleteEventsTopology } from '../support/events-harness.js';
import { basicAuth, DEMO_WITH_BROKER, demoTenantYaml } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

const ROOT = new URL('../../', import.meta.url);
const dashboard = JSON.parse(readFileSync(new URL('ops/grafana-dashboard.json', ROOT), 'utf8')) as {
  panels: Array<{
    id: number;
    type: string;
    title: string;
    description?: string;
    targets?: Array<{ expr: string }>;
  }>;
  templating: { list: Array<{ query: { query: string } }> };
};
const alerts = parse(readFileSync(new URL('ops/alerts.yaml', ROOT), 'utf8')) as {
  groups: Array<{
    name: string;
    rules: Array<{
      alert: string;
      expr: string;
      labels: { severity: string };
      annotations: { summary: string };
    }>;
  }>;
};

const METRIC = /\b((?:warehouse_ingest|process|nodejs)_[a-z0-9_]+)/g;
const names = (expr: string) => [...expr.matchAll(METRIC)].map((m) => m[1]!);

/** Every series name a scrape can hold: histograms and summaries have their suffixed series. */
function exported(text: string): Set<string> {
  const out = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    out.add(name!);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name! + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) out.add(name! + s);
  }
  return out;
}

const temp = tempFolder('ops-files-');
let service: RunningService;
let topology: TestTopology;
let scrape: string;
/** The first scrape, right after start-up: before any request, and before the drop's file is settled. */
let fresh: string;
const events = {
  exchange: uniqueName('test.ops.events'),
  queue: { name: uniqueName('test.ops.events.q'), type: 'classic' as const },
};

beforeAll(async () => {
  topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'test.ops' });
  const drop = path.join(temp.dir, 'drop');
  mkdirSync(drop);
  mkdirSync(path.join(temp.dir, 'pipelines'));
  copyFileSync(new URL('fixtures/demo/sales-orders.json', ROOT), path.join(drop, 'orders.json'));
  temp.write(
    'pipelines/ops-drop.yaml',
    stringify({
      name: 'ops-drop',
      businessId: 'DEMO',
      kind: 'sales-orders',
      format: 'v2-json',
      source: { type: 'local', path: drop },
      readiness: { checks: 1, intervalMs: 10, quietMs: 0 },
      schedule: { pollIntervalMs: 200 },
    }),
  );
  const config = [
    await demoTenantYaml(),
    stringify({
      dataDirectory: path.join(temp.dir, 'data'),
      pipelinesDirectory: path.join(temp.dir, 'pipelines'),
      broker: {
        exchange: topology.exchange,
        queues: [{ name: topology.queue, bindingKeys: ['#'] }],
      },
      events,
      // The history's series (its alerts): the embedded store under the data directory.
      history: { enabled: true },
    }),
  ].join('\n');
  service = await startService({
    env: {
      INGEST_CONFIG: temp.write('config.yaml', config),
      INGEST_ENV: 'development',
      AMQP_URL,
      HOST: '127.0.0.1',
      PORT: '0',
      ADMIN_PORT: '0',
    },
    log: createLogger({ level: 'silent' }),
  });
  fresh = await (await fetch(`${service.adminUrl}/metrics`)).text();
  const response = await fetch(`${service.url}/api/v1/sales-orders`, {
    method: 'POST',
    headers: { authorization: basicAuth(DEMO_WITH_BROKER), 'content-type': 'text/csv' },
    body: readFileSync(new URL('fixtures/demo/sales-orders.csv', ROOT)),
  });
  expect(response.status).toBe(202);
  await vi.waitFor(
    () => expect(existsSync(path.join(drop, 'processed', 'orders.json.receipt.json'))).toBe(true),
    { timeout: 20_000, interval: 100 },
  );
  // The look that took the file ends after its receipt: wait for its timestamp too.
  await vi.waitFor(
    async () => {
      scrape = await (await fetch(`${service.adminUrl}/metrics`)).text();
      expect(scrape).toContain('warehouse_ingest_last_successful_look_timestamp_seconds{');
    },
    { timeout: 10_000, interval: 100 },
  );
});
afterAll(async () => {
  if (service) {
    await service.stop();
    const connection = await connect(AMQP_URL);
    const channel = await connection.createChannel();
    await deleteEventsTopology(channel, service.config.events);
    await connection.close();
  }
  await topology?.cleanup();
});

describe('ops/ files against a running service', () => {
  it('every metric the Grafana dashboard and the alert rules name is exported on the admin /metrics', () => {
    const have = exported(scrape);
    const wanted = new Map<string, string>();
    for (const panel of dashboard.panels)
      for (const target of panel.targets ?? [])
        for (const name of names(target.expr)) wanted.set(name, `panel "${panel.title}"`);
    for (const variable of dashboard.templating.list)
      for (const name of names(variable.query.query)) wanted.set(name, 'a dashboard variable');
    for (const group of alerts.groups)
      for (const rule of group.rules)
        for (const name of names(rule.expr)) wanted.set(name, `alert ${rule.alert}`);
    // The events half and the drops are in there too, not just HTTP.
    expect([...wanted.keys()]).toEqual(
      expect.arrayContaining([
        'warehouse_ingest_event_deliveries_total',
        'warehouse_ingest_file_duration_seconds_bucket',
        'warehouse_ingest_last_successful_look_timestamp_seconds',
        'warehouse_ingest_http_requests_total',
        'warehouse_ingest_build_info',
      ]),
    );
    const missing = [...wanted].filter(([name]) => !have.has(name)).map(([n, w]) => `${n} (${w})`);
    expect(missing).toEqual([]);
  });

  it('the series operators read first have values after one request and one file', () => {
    expect(scrape).toMatch(
      /^warehouse_ingest_http_requests_total\{route="\/api\/v1\/sales-orders",method="POST",status="202",business="DEMO"\} 1$/m,
    );
    expect(scrape).toMatch(
      /^warehouse_ingest_file_duration_seconds_count\{pipeline="ops-drop",outcome="accepted"\} 1$/m,
    );
    const look =
      /^warehouse_ingest_last_successful_look_timestamp_seconds\{pipeline="ops-drop"\} (\S+)$/m.exec(
        scrape,
      );
    expect(Math.abs(Number(look?.[1]) - Date.now() / 1000)).toBeLessThan(120);
    expect(scrape).toMatch(
      /^warehouse_ingest_build_info\{version="[^"]+",node="v\d+\.\d+\.\d+"\} 1$/m,
    );
  });

  it('every counter an alert reads with increase() is exported at 0 from start-up, for every label set it knows', () => {
    // increase() needs a sample before the first event: a series that appears at 1 is never "an increase".
    const counters = alerts.groups
      .flatMap((g) => g.rules)
      .flatMap((rule) =>
        [...rule.expr.matchAll(/increase\(\s*(warehouse_ingest_[a-z0-9_]+)(?:\{([^}]*)\})?/g)].map(
          ([, name, matchers]) => ({ rule: rule.alert, name: name!, matchers: matchers ?? '' }),
        ),
      );
    expect(counters.map((c) => c.name)).toEqual(
      expect.arrayContaining([
        'warehouse_ingest_receipt_write_failures_total',
        'warehouse_ingest_event_dead_letters_total',
        'warehouse_ingest_http_connections_dropped_total',
      ]),
    );
    const series = (name: string) =>
      [...fresh.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))].map(
        ([, labels, value]) => ({ labels: labels ?? '', value: Number(value) }),
      );
    for (const { rule, name, matchers } of counters) {
      // The alert's own matchers (reason="limit") must select a series already there, at 0.
      const wanted = matchers.split(',').filter((m) => m.trim() !== '');
      const found = series(name).filter(({ labels }) =>
        wanted.every((m) => labels.split(',').includes(m.trim())),
      );
      expect(found.length, `${name} (alert ${rule}) at start-up`).toBeGreaterThan(0);
      for (const { labels, value } of found) expect(value, `${name}{${labels}}`).toBe(0);
    }
    // Per-pipeline counters: one series for each configured pipeline.
    expect(fresh).toMatch(
      /^warehouse_ingest_receipt_write_failures_total\{pipeline="ops-drop"\} 0$/m,
    );
  });

  it('the alert rules are well-formed: a name, an expression, a severity and a summary each, names unique', () => {
    const rules = alerts.groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThan(8);
    for (const rule of rules) {
      expect(rule.alert, JSON.stringify(rule)).toMatch(/^WarehouseIngest[A-Za-z]+$/);
      expect(rule.expr.trim().length).toBeGreaterThan(0);
      expect(['critical', 'warning', 'info']).toContain(rule.labels.severity);
      expect(rule.annotations.summary.length).toBeGreaterThan(0);
    }
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
  });

  it('the dashboard panels have unique ids and a description each', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row'))
      expect(panel.description, panel.title).toBeTruthy();
  });
});
