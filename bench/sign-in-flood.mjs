// A business's first (uncached) API request during an unauthenticated flood of operator sign-ins
// (issue 38): `node dist/cli.js serve` in production with one operator and one tenant per probe, the
// hashes at the cost `hash-key` writes (scrypt N=2^17). Each round times a cold key check with no
// flood, then 64 concurrent `POST /portal/operator` with random names — from one address, and from
// 64 addresses behind a trusted proxy (X-Forwarded-For) — with a cold key check sent right after
// them. Target: the cold check within 1 s during the flood.
//   npm run bench -- --only=sign-in, or node bench/sign-in-flood.mjs after a build (BENCH_FLOOD_ROUNDS, default 3)
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = path.join(ROOT, 'dist/cli.js');
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const ROUNDS = Number(process.env.BENCH_FLOOD_ROUNDS ?? 3);
const FLOOD = 64;
const PROBES = ROUNDS * 3;
const WINDOW_SECONDS = 5;

const hash = (secret) =>
  new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [CLI, 'hash-key', '-'], (error, stdout) =>
      error ? reject(error) : resolve(stdout.trim()),
    );
    child.stdin.end(secret);
  });
const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** Runs the rounds and prints one line per round. */
export async function runSignInFloodBench() {
  const dir = mkdtempSync(path.join(tmpdir(), 'ingest-flood-'));
  const tenants = await Promise.all(
    Array.from({ length: PROBES }, async (_, i) => ({
      businessId: `FLOOD${i}`,
      key: `flood-bench-key-${i}-0123456789`,
      hash: await hash(`flood-bench-key-${i}-0123456789`),
    })),
  );
  const config = path.join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      `dataDirectory: ${JSON.stringify(path.join(dir, 'data'))}`,
      'http:',
      '  trustProxyHops: 1',
      'portal:',
      '  enabled: true',
      // A short window, so that each flood meets full limits without a minute's wait between them.
      `  signInLimits: { windowSeconds: ${WINDOW_SECONDS} }`,
      '  secret: { env: PORTAL_SECRET }',
      `  operators: [{ name: ops, passwordHash: ${JSON.stringify(await hash('the-operator-password'))} }]`,
      'tenants:',
      ...tenants.flatMap((t) => [
        `  - businessId: ${t.businessId}`,
        `    apiKeyHash: ${JSON.stringify(t.hash)}`,
      ]),
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const port = await freePort();
  const adminPort = await freePort();
  const child = spawn(process.execPath, ['--max-semi-space-size=32', CLI, 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      INGEST_ENV: 'production',
      INGEST_CONFIG: config,
      AMQP_URL,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      PORTAL_SECRET: 'a-bench-portal-secret-of-thirty-two-chars',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; i < 300; i++) {
      const ok = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    let probe = 0;
    const coldCheck = async () => {
      const t = tenants[probe++];
      const started = performance.now();
      const answer = await fetch(`${url}/api/v2/batches`, {
        headers: {
          authorization: `Basic ${Buffer.from(`${t.businessId}:${t.key}`).toString('base64')}`,
        },
      });
      await answer.arrayBuffer();
      if (answer.status !== 200) throw new Error(`cold check answered ${answer.status}`);
      return performance.now() - started;
    };
    const flood = (addresses) =>
      Array.from({ length: FLOOD }, (_, i) =>
        fetch(`${url}/portal/operator`, {
          method: 'POST',
          redirect: 'manual',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-forwarded-for': addresses === 1 ? '203.0.113.7' : `198.51.100.${i}`,
          },
          body: new URLSearchParams({ name: `random-${i}`, password: 'guess' }).toString(),
        }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
      );
    const ms = (n) => `${Math.round(n)} ms`;
    console.log(
      `sign-in flood: ${FLOOD} sign-ins, hashes at hash-key's cost, load ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    );
    for (let round = 1; round <= ROUNDS; round++) {
      const quiet = await coldCheck();
      const results = [];
      for (const addresses of [1, FLOOD]) {
        const sent = flood(addresses);
        const during = await coldCheck();
        const statuses = await Promise.all(sent);
        const count = (s) => statuses.filter((x) => x === s).length;
        results.push(
          `${addresses} address(es): ${ms(during)} (401 ${count(401)}, 429 ${count(429)})`,
        );
        // The limits' window passes before the next flood meets them again.
        await new Promise((r) => setTimeout(r, (WINDOW_SECONDS + 1) * 1000));
      }
      console.log(
        `round ${round}: cold key check alone ${ms(quiet)}; during the flood from ${results.join('; from ')}`,
      );
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runSignInFloodBench();
