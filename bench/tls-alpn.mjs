// HTTP/1.1 over TLS on the two servers the partner-facing listener can be: node:https
// (`http.tls.http2: false`) and node:http2's createSecureServer({ allowHTTP1: true }) (`true`,
// ALPN h2 + http/1.1). Same h3 app, same limits; an HTTP/1.1 keep-alive client (autocannon, which
// offers no ALPN: HTTP/1.1 either way) POSTs a small JSON body. The key file must be chmod 600.
// Prints requests/s and the server's CPU seconds per 1,000 requests (server in a child process).
//   node bench/tls-alpn.mjs <https|h2> <cert.pem> <key.pem> [amount=50000 | seconds, e.g. 8s] [connections=10]
// A number: that many requests, so that a whole-process timer (/usr/bin/time) compares like with
// like (autocannon ends such a run on a whole second: read its requests/s from a timed run, `8s`).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const [, , kind, certFile, keyFile, requests = '50000', connections = '10'] = process.argv;

if (process.env.TLS_ALPN_SERVER) {
  // The service's own server (src/http/server.ts, through tsx): its limits, clientError handling and
  // connection bound, with `http.tls.http2` off (node:https) or on (node:http2, allowHTTP1).
  const { H3 } = await import('h3');
  const { createHttpServer } = await import('../src/http/server.ts');
  const { createLogger } = await import('../src/log.ts');
  const { createMetrics } = await import('../src/metrics.ts');
  const app = new H3().post('/ingest', async (event) => {
    const body = await event.req.text();
    event.res.status = 202;
    return { received: body.length };
  });
  const server = createHttpServer(
    app,
    {
      listener: 'public',
      maxConnections: 1000,
      requestTimeoutMs: 30_000,
      maxHeaderBytes: 16_384,
      tls: { cert: certFile, key: keyFile, http2: kind === 'h2' },
    },
    { log: createLogger({ level: 'silent' }), metrics: createMetrics({ businesses: [] }) },
  );
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  process.on('message', (what) => {
    if (what === 'stop') process.exit(0);
    const { user, system } = process.cpuUsage();
    process.send({ cpuSeconds: (user + system) / 1e6 });
  });
} else {
  const autocannon = (await import('autocannon')).default;
  const child = fork(fileURLToPath(import.meta.url), process.argv.slice(2), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, TLS_ALPN_SERVER: '1' },
  });
  const message = () => new Promise((resolve) => child.once('message', resolve));
  const { port } = await message();
  const body = JSON.stringify({
    records: Array.from({ length: 8 }, (_, i) => ({ sku: `S${i}`, quantity: i })),
  });
  const run = (what) =>
    autocannon({
      url: `https://127.0.0.1:${port}/ingest`,
      connections: Number(connections),
      ...(String(what).endsWith('s')
        ? { duration: Number.parseFloat(what) }
        : { amount: Number(what) }),
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      tlsOptions: { rejectUnauthorized: false },
    });
  await run(5000); // warm-up, not counted
  child.send('cpu');
  const before = await message();
  const result = await runCounted(run, requests, child, message, before);
  child.send('stop');
  console.log(JSON.stringify({ kind, ...result }));
}

async function runCounted(run, amount, child, message, before) {
  const started = performance.now();
  const result = await run(amount);
  const elapsed = (performance.now() - started) / 1000;
  child.send('cpu');
  const after = await message();
  return {
    requestsPerSecond: Math.round(result.requests.total / elapsed),
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    serverCpuMsPer1000: Math.round(
      ((after.cpuSeconds - before.cpuSeconds) * 1e6) / result.requests.total,
    ),
  };
}
