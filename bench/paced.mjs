// Open-loop load: requests sent evenly at a fixed rate on a pool of keep-alive sockets, each at its
// scheduled time whatever the earlier answers did (autocannon is closed-loop: a slow answer delays
// the next request, which hides the slowness — "coordinated omission"). Latency runs from the
// scheduled send time, so time spent waiting for a free socket or for a late timer counts too.
// node:http with a keep-alive Agent: ~0.1 ms of this process's CPU per request, far below the
// servers' (its share is printed next to theirs).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { quantiles, round } from './load.mjs';

/** A request that left more than this after its scheduled time is counted as `late` (the generator fell behind). */
const LATE_MS = 5;

/**
 * `rate` requests/s for `seconds`, bodies taken in turn. Resolves once every request has an answer
 * (or failed, or timed out after `timeoutMs`). `stopWhen`: a promise that cuts the run short.
 */
export async function paced({
  url,
  path,
  authorization,
  bodies,
  recordsPerBody,
  rate,
  seconds,
  sockets = 64,
  timeoutMs = 10_000,
  stopWhen,
}) {
  const { hostname, port } = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  const total = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const latencies = [];
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  let late = 0;
  let maxSendLagMs = 0;
  let firstError;
  let stopped = false;
  stopWhen?.then(() => (stopped = true));

  const send = (index, scheduled) =>
    new Promise((resolve) => {
      const lag = performance.now() - scheduled;
      if (lag > LATE_MS) late += 1;
      maxSendLagMs = Math.max(maxSendLagMs, lag);
      const body = bodies[index % bodies.length];
      const fail = (why) => {
        errors += 1;
        firstError ??= why;
        resolve();
      };
      const request = http.request(
        {
          agent,
          host: hostname,
          port,
          path,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': body.length,
            authorization,
          },
          timeout: timeoutMs,
        },
        (response) => {
          const chunks = response.statusCode >= 300 ? [] : null;
          response.on('data', (chunk) => chunks?.push(chunk));
          response.on('error', (error) => fail(error.message));
          response.on('end', () => {
            if (response.statusCode >= 200 && response.statusCode < 300) {
              ok += 1;
              latencies.push(performance.now() - scheduled);
            } else {
              non2xx += 1;
              firstError ??= `${response.statusCode} ${Buffer.concat(chunks).toString().slice(0, 400)}`;
            }
            resolve();
          });
        },
      );
      request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.on('error', (error) => fail(error.message));
      request.end(body);
    });

  const inFlight = [];
  const started = performance.now() + 20;
  await new Promise((done) => {
    let next = 0;
    const pump = () => {
      const now = performance.now();
      while (next < total && !stopped && started + next * interval <= now) {
        inFlight.push(send(next, started + next * interval));
        next += 1;
      }
      if (next >= total || stopped) return done();
      setTimeout(pump, Math.max(0, started + next * interval - performance.now()));
    };
    setTimeout(pump, 20);
  });
  await Promise.all(inFlight);
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();

  const at = quantiles(latencies);
  return {
    seconds: round(elapsed, 2),
    rate,
    scheduled: total,
    requests: inFlight.length,
    ok,
    records: ok * recordsPerBody,
    non2xx,
    errors,
    late,
    failed: non2xx + errors,
    maxSendLagMs: round(maxSendLagMs, 2),
    firstError: firstError ?? null,
    recordsPerSecond: Math.round((ok * recordsPerBody) / elapsed),
    latencyMs: { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) },
  };
}
