// One autocannon run: keep-alive connections, each request takes the next body of the pool.
// Latencies are collected from autocannon's per-response event (float ms) rather than its
// histogram, which rounds to whole milliseconds — too coarse for 1-record batches.
import autocannon from 'autocannon';

/** `stopWhen`: a promise that cuts the run short (the server died). */
export async function load({
  url,
  path,
  authorization,
  bodies,
  recordsPerBody,
  connections,
  seconds,
  stopWhen,
}) {
  let next = 0;
  let non2xx = 0;
  let firstError;
  const latencies = [];
  const instance = autocannon({
    url,
    connections,
    pipelining: 1,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', authorization },
        setupRequest: (request) => ({ ...request, body: bodies[next++ % bodies.length] }),
        onResponse: (status, body) => {
          if (status >= 200 && status < 300) return;
          non2xx += 1;
          firstError ??= `${status} ${String(body).slice(0, 400)}`;
        },
      },
    ],
  });
  stopWhen?.then(() => instance.stop());
  instance.on('response', (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) latencies.push(ms);
  });
  const result = await instance;
  const elapsed = (result.finish - result.start) / 1000;
  const ok = result['2xx'];
  const at = quantiles(latencies);
  return {
    seconds: round(elapsed, 2),
    requests: ok + non2xx,
    ok,
    records: ok * recordsPerBody,
    non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    firstError: firstError ?? null,
    recordsPerSecond: Math.round((ok * recordsPerBody) / elapsed),
    latencyMs: { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) },
  };
}

/** The q-quantile (nearest rank, ms to 2 decimals) of latencies, null when there are none; sorts them. */
export function quantiles(latencies) {
  latencies.sort((a, b) => a - b);
  return (q) =>
    latencies.length
      ? round(latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)], 2)
      : null;
}

export function round(value, digits) {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
