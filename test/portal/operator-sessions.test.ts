import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Agent, fetch as fetchFrom } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/api-keys.js';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { LogCapture } from '../support/http-app.js';
import { REDIS_URL, removeKeys, uniquePrefix } from '../support/redis.js';
import { tempFolder } from '../support/temp.js';

/**
 * Operators across instances sharing their state on Redis (issue 38): the sign-in limits are
 * the fleet's, not each instance's; a session ends once its operator is no longer configured —
 * after a reload, and on an instance started without it; and the sign-in's log line names the
 * client's address.
 */
const temp = tempFolder('portal-operator-sessions-');
const keyPrefix = uniquePrefix();
const PASSWORD = 'operator-sessions-password';
const LIMITS = { perAddress: 3, failuresPerName: 5, overall: 100, windowSeconds: 60 };
const running: RunningService[] = [];
const logs = new LogCapture();
let operatorsLine: string;

function configFile(name: string, operators: string): string {
  mkdirSync(path.join(temp.dir, name, 'pipelines'), { recursive: true });
  const file = path.join(temp.dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `dataDirectory: ${temp.dir}/${name}/data`,
      `pipelinesDirectory: ${temp.dir}/${name}/pipelines`,
      'sharedState:',
      `  redis: { url: "${REDIS_URL}", keyPrefix: "${keyPrefix}" }`,
      'portal:',
      '  secret: { env: PORTAL_TEST_SECRET }',
      `  operators: ${operators}`,
      `  signInLimits: ${JSON.stringify(LIMITS)}`,
    ].join('\n'),
  );
  return file;
}

async function start(name: string, operators: string): Promise<RunningService> {
  const service = await startService({
    env: {
      INGEST_CONFIG: configFile(name, operators),
      INGEST_ENV: 'development',
      PORT: '0',
      ADMIN_PORT: '0',
      PORTAL_TEST_SECRET: 'portal-secret-for-operator-sessions-0123',
    },
    log: createLogger({ destination: logs }),
  });
  running.push(service);
  return service;
}

beforeAll(async () => {
  // The current cost: a sign-in with it is not hashed again.
  const hash = await hashApiKey(PASSWORD, { ln: 17, r: 8, p: 1 });
  operatorsLine = JSON.stringify([{ name: 'ops', passwordHash: hash }]);
  await start('a', operatorsLine);
  await start('b', operatorsLine);
}, 60_000);

afterAll(async () => {
  for (const service of running) await service.stop();
  await removeKeys(keyPrefix);
});

/** A client of its own loopback address: each test's sign-ins count against their own limit. */
const from = (localAddress: string) => new Agent({ localAddress });
const signIn = (at: RunningService, name: string, password: string, client = from('127.0.0.1')) =>
  fetchFrom(`${at.url}/portal/operator`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ name, password }),
    redirect: 'manual',
    dispatcher: client,
  });
/** The session cookie of a sign-in as `ops`. */
const operatorCookie = async (at: RunningService, client: Agent) => {
  const answer = await signIn(at, 'ops', PASSWORD, client);
  expect(answer.status).toBe(303);
  return answer.headers.get('set-cookie')?.split(';')[0] ?? '';
};

const drops = (at: RunningService, cookie: string) =>
  fetch(`${at.url}/portal/operator/drops`, { headers: { cookie } });

describe('operators across instances', () => {
  it("counts one address's sign-ins against the fleet's limit, and names the address in the log", async () => {
    const [a, b] = running as [RunningService, RunningService];
    // Three tries per address in all: a, b, a are tried (and wrong); b refuses the fourth.
    for (const [at, name] of [
      [a, 'random-1'],
      [b, 'random-2'],
      [a, 'random-3'],
    ] as const)
      expect((await signIn(at, name, 'guess')).status).toBe(401);
    const refused = await signIn(b, 'random-4', 'guess');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const line = logs.lines.find(
      (l) => l.msg === 'portal: operator sign-in refused' && l.operator === 'random-4',
    );
    expect(line).toMatchObject({
      address: expect.stringMatching(/127\.0\.0\.1/),
      limit: 'address',
    });
  }, 30_000);

  it("ends an operator's session once a reload removes the operator, on every instance", async () => {
    const [a, b] = running as [RunningService, RunningService];
    const cookie = await operatorCookie(a, from('127.0.0.2'));
    expect(
      logs.lines.find((l) => l.msg === 'portal: operator signed in' && l.address === '127.0.0.2'),
    ).toMatchObject({ operator: 'ops' });
    for (const at of [a, b]) expect((await drops(at, cookie)).status).toBe(200);
    configFile('b', '[]');
    expect(b.reload()).toBe(true);
    // Its next page on b ends it; on a (which still has ops) it is gone too: the session is shared.
    expect((await drops(b, cookie)).status).toBe(404);
    expect((await drops(a, cookie)).status).toBe(404);
    const portal = await fetch(`${a.url}/portal`, { headers: { cookie } });
    expect(portal.status).toBe(401);
    // And the operator removed from b signs in there no more.
    expect((await signIn(b, 'ops', PASSWORD, from('127.0.0.2'))).status).toBe(401);
    configFile('b', operatorsLine);
    expect(b.reload()).toBe(true);
    // Operators are reloaded: no reload said the portal needs a restart for them.
    const restart = logs.lines.filter(
      (l) => Array.isArray(l.restartNeeded) && l.restartNeeded.includes('portal'),
    );
    expect(restart).toEqual([]);
  }, 60_000);

  it('ends it on an instance started without the operator (a restart), its session kept on Redis', async () => {
    const [a] = running as [RunningService];
    const cookie = await operatorCookie(a, from('127.0.0.3'));
    const c = await start('c', '[]');
    expect((await drops(c, cookie)).status).toBe(404);
    expect((await drops(a, cookie)).status).toBe(404);
  }, 60_000);
});
