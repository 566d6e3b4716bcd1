import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startService, type RunningService } from '../../src/main.js';
import { signLink } from '../../src/portal/links.js';
import { LogCapture } from '../support/http-app.js';
import { runCli } from '../support/cli-process.js';
import { REDIS_URL, removeKeys, uniquePrefix } from '../support/redis.js';
import { tempFolder } from '../support/temp.js';

/**
 * Two instances sharing their state on Redis and one configured portal secret (`{ env }`): a
 * link that signed in on one is refused on the other, because its nonce is claimed in the
 * shared state, not in either instance's memory; and a session made on one is served by both.
 */
const temp = tempFolder('portal-instances-');
const keyPrefix = uniquePrefix();
const SECRET = 'portal-secret-for-two-instances-0123456789';
const instances: RunningService[] = [];

beforeAll(async () => {
  for (const name of ['a', 'b']) {
    mkdirSync(path.join(temp.dir, name, 'pipelines'), { recursive: true });
    const config = temp.write(
      `${name}.yaml`,
      [
        `dataDirectory: ${temp.dir}/${name}/data`,
        `pipelinesDirectory: ${temp.dir}/${name}/pipelines`,
        'sharedState:',
        `  redis: { url: "${REDIS_URL}", keyPrefix: "${keyPrefix}" }`,
        'portal:',
        '  secret: { env: PORTAL_TEST_SECRET }',
      ].join('\n'),
    );
    instances.push(
      await startService({
        env: {
          INGEST_CONFIG: config,
          INGEST_ENV: 'development',
          PORT: '0',
          ADMIN_PORT: '0',
          PORTAL_TEST_SECRET: SECRET,
        },
        log: createLogger({ destination: new LogCapture() }),
      }),
    );
  }
});

afterAll(async () => {
  for (const instance of instances) await instance.stop();
  await removeKeys(keyPrefix);
});

const signIn = (at: RunningService, token: string) =>
  fetch(`${at.url}/portal/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }),
    redirect: 'manual',
  });

describe('portal links across instances', () => {
  it('signs in once: the second instance refuses the link the first took', async () => {
    const [a, b] = instances as [RunningService, RunningService];
    const token = signLink(Buffer.from(SECRET), 'DEMO', Date.now() + 60_000);
    const first = await signIn(a, token);
    expect(first.status).toBe(303);
    expect(first.headers.get('set-cookie')).toMatch(/^portal_session=/);
    const second = await signIn(b, token);
    expect(second.status).toBe(409);
    expect(await second.text()).toContain('This sign-in link has already been used');
    expect(second.headers.get('set-cookie')).toBeNull();
  });

  it('both take a fresh link signed with the configured secret, and refuse one signed with another', async () => {
    for (const at of instances) {
      const fresh = signLink(Buffer.from(SECRET), 'DEMO', Date.now() + 60_000);
      expect((await signIn(at, fresh)).status).toBe(303);
      const foreign = signLink(
        Buffer.from('another-secret-another-secret-another'),
        'DEMO',
        Date.now() + 60_000,
      );
      expect((await signIn(at, foreign)).status).toBe(400);
    }
  });

  it('keeps a session for every instance: signed in on one, the other serves it, and signing out ends it on both', async () => {
    const [a, b] = instances as [RunningService, RunningService];
    const answer = await signIn(a, signLink(Buffer.from(SECRET), 'DEMO', Date.now() + 60_000));
    const cookie = answer.headers.get('set-cookie')!.split(';')[0]!;
    const page = (at: RunningService, path = '/portal/records') =>
      fetch(`${at.url}${path}`, { headers: { cookie } });
    for (const at of instances) expect((await page(at)).status).toBe(200);
    // Signed out on B, with B's form (its CSRF token is the session's, the same on both).
    const form = await (await page(b)).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(form)?.[1];
    expect(csrf).toBeTruthy();
    const out = await fetch(`${b.url}/portal/logout`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: csrf! }),
      redirect: 'manual',
    });
    expect(out.status).toBeLessThan(400);
    for (const at of instances) expect((await page(at)).status).toBe(401);
  });

  it('lint names portal.secret when production enables the portal without one, or with a short one', async () => {
    const env = {
      INGEST_ENV: 'production',
      INGEST_CONFIG: temp.write('lint.yaml', `pipelinesDirectory: ${temp.dir}/a/pipelines\n`),
      AMQP_URL: 'amqp://127.0.0.1:5672',
      INGEST_PORTAL__ENABLED: 'true',
    };
    const missing = await runCli(['lint'], { env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('portal.secret: Required in production');
    const short = await runCli(['lint'], {
      env: { ...env, INGEST_PORTAL__SECRET: '{"env":"PORTAL_LINT"}', PORTAL_LINT: 'short' },
    });
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('Expected at least 32 characters');
    const fine = await runCli(['lint'], {
      env: { ...env, INGEST_PORTAL__SECRET: '{"env":"PORTAL_LINT"}', PORTAL_LINT: SECRET },
    });
    expect(fine.stderr).toBe('');
    expect(fine.code).toBe(0);
  });
});
