import type { Metric, Registry } from 'prom-client';

/**
 * Counters and histograms for the series touched on every request or batch, kept apart from
 * prom-client's own classes: prom-client validates and hashes a labels object (keys sorted) on
 * each `inc()` and `observe()`, children included (~1 µs a call here, ~20 µs for the four calls
 * of an answer on the busy 2-core machine). Here a label set is one string key into a Map, and
 * prom-client formats the entries only at scrape time (`get()`, the shape its registry reads).
 * Label values are passed in `labelNames` order and read during the call only (copied when a new
 * label set is stored); callers keep them bounded (route templates, configured businesses, fixed
 * outcomes).
 */
export interface CounterSeries {
  inc(values: readonly string[], by?: number): void;
}

export interface HistogramSeries {
  observe(values: readonly string[], value: number): void;
}

interface Definition {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
}

type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };

/** Registers a metric the registry reads by its structure (name, help, type, get). */
function register<E>(
  registry: Registry,
  { name, help }: Definition,
  type: 'counter' | 'histogram',
  entries: Map<string, E>,
  samples: () => Sample[],
): void {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => ({ name, help, type, aggregator: 'sum', values: samples() }),
    reset: () => entries.clear(),
  };
  // prom-client's type names its own classes only.
  registry.registerMetric(metric as unknown as Metric);
}

const keyOf = (values: readonly string[]) => values.join('\u0000');

const labelsOf = (labelNames: readonly string[], values: readonly string[]) =>
  Object.fromEntries(labelNames.map((label, i) => [label, values[i]!]));

export function counterSeries(registry: Registry, definition: Definition): CounterSeries {
  const entries = new Map<string, { values: readonly string[]; count: number }>();
  register(registry, definition, 'counter', entries, () =>
    [...entries.values()].map((e) => ({
      labels: labelsOf(definition.labelNames, e.values),
      value: e.count,
    })),
  );
  return {
    inc(values, by = 1) {
      const key = keyOf(values);
      const entry = entries.get(key);
      if (entry) entry.count += by;
      else entries.set(key, { values: [...values], count: by });
    },
  };
}

export function histogramSeries(
  registry: Registry,
  definition: Definition & { readonly buckets: readonly number[] },
): HistogramSeries {
  const { buckets, labelNames, name } = definition;
  /** Per bucket, not cumulative; the last one is +Inf. */
  const entries = new Map<string, { values: readonly string[]; sum: number; counts: number[] }>();
  register(registry, definition, 'histogram', entries, () => {
    const out: Sample[] = [];
    for (const { values, sum, counts } of entries.values()) {
      const labels = labelsOf(labelNames, values);
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
  });
  return {
    observe(values, value) {
      const key = keyOf(values);
      let entry = entries.get(key);
      if (!entry) {
        entry = {
          values: [...values],
          sum: 0,
          counts: new Array<number>(buckets.length + 1).fill(0),
        };
        entries.set(key, entry);
      }
      entry.sum += value;
      let i = 0;
      while (i < buckets.length && value > buckets[i]!) i += 1;
      entry.counts[i]! += 1;
    },
  };
}
