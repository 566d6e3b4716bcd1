import type { Metric, Registry } from 'prom-client';

/**
 * The per-request series (`warehouse_ingest_http_requests_total` and
 * `warehouse_ingest_http_request_duration_seconds`), kept apart from prom-client's own classes
 * because they are touched on every answer: prom-client hashes a labels object on each `inc()`
 * and `observe()`, children included (measured ~20 µs per answer on the busy 2-core machine, against
 * ~0.5 µs here). One entry per label set, looked up by a string key; prom-client formats them
 * at scrape time (`get()`, the shape its registry reads). Bounded: routes × methods × statuses ×
 * configured businesses.
 */
export interface RequestSeries {
  observe(route: string, method: string, status: string, business: string, seconds: number): void;
}

interface Entry {
  readonly labels: { route: string; method: string; status: string };
  readonly business: string;
  count: number;
  sum: number;
  /** Per bucket (not cumulative); the last one is +Inf. */
  readonly buckets: number[];
}

type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };

export function createRequestSeries(registry: Registry, buckets: readonly number[]): RequestSeries {
  const entries = new Map<string, Entry>();

  const metric = (name: string, help: string, type: string, values: () => Sample[]) => ({
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
    reset: () => entries.clear(),
  });
  const register = (m: ReturnType<typeof metric>) =>
    // Structurally what the registry reads (name, help, type, get); prom-client's type names its own classes only.
    registry.registerMetric(m as unknown as Metric);

  register(
    metric(
      'warehouse_ingest_http_requests_total',
      'Answers of the partner-facing port, by route template, method, status and business (`none` before authentication, `other` for ids not configured).',
      'counter',
      () =>
        [...entries.values()].map((e) => ({
          labels: { ...e.labels, business: e.business },
          value: e.count,
        })),
    ),
  );
  register(
    metric(
      'warehouse_ingest_http_request_duration_seconds',
      'Time from the request to its answer on the partner-facing port, by route template, method and status.',
      'histogram',
      () => histogramSamples(entries, buckets),
    ),
  );

  return {
    observe(route, method, status, business, seconds) {
      const key = `${route} ${method} ${status} ${business}`;
      let entry = entries.get(key);
      if (!entry) {
        entry = {
          labels: { route, method, status },
          business,
          count: 0,
          sum: 0,
          buckets: new Array<number>(buckets.length + 1).fill(0),
        };
        entries.set(key, entry);
      }
      entry.count += 1;
      entry.sum += seconds;
      let i = 0;
      while (i < buckets.length && seconds > buckets[i]!) i += 1;
      entry.buckets[i]! += 1;
    },
  };
}

/** The latency histogram has no business label: entries of one route, method and status add up. */
function histogramSamples(entries: Map<string, Entry>, buckets: readonly number[]): Sample[] {
  const merged = new Map<string, { labels: Entry['labels']; sum: number; buckets: number[] }>();
  for (const entry of entries.values()) {
    const key = `${entry.labels.route} ${entry.labels.method} ${entry.labels.status}`;
    const into = merged.get(key);
    if (!into)
      merged.set(key, { labels: entry.labels, sum: entry.sum, buckets: [...entry.buckets] });
    else {
      into.sum += entry.sum;
      entry.buckets.forEach((n, i) => {
        into.buckets[i]! += n;
      });
    }
  }
  const out: Sample[] = [];
  const name = 'warehouse_ingest_http_request_duration_seconds';
  for (const { labels, sum, buckets: counts } of merged.values()) {
    let cumulative = 0;
    counts.forEach((n, i) => {
      cumulative += n;
      out.push({
        labels: { le: i < buckets.length ? buckets[i]! : '+Inf', ...labels },
        value: cumulative,
        metricName: `${name}_bucket`,
      });
    });
    out.push({ labels, value: sum, metricName: `${name}_sum` });
    out.push({ labels, value: cumulative, metricName: `${name}_count` });
  }
  return out;
}
