/**
 * The shared state behind Redis Sentinel (test/setup/redis-sentinel.ts: a master, a replica and
 * three sentinels of its own), its master killed with `kill -9` under keyed load: the service
 * follows the promoted replica; meanwhile each keyed request is answered as the Idempotency-Key
 * promise says or `503 idempotency-unavailable` with `Retry-After`; afterwards keyed requests
 * succeed again; and no key is published twice. Then the old master returns as a replica, and a
 * failover asked of the sentinels (the old master up) is followed as well.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { openRedisState } from '../../src/http-state/redis.js';
import { createLogger } from '../../src/log.js';
import { startService } from '../../src/main.js';
import { validRecords } from '../records/fixtures.js';
import { answer, createTestApp, LogCapture, type TestApp } from '../support/http-app.js';
import { type KeyedLoad, keyedLoadFigures, startKeyedLoad } from '../support/keyed-load.js';
import { uniquePrefix } from '../support/redis.js';
import { askRedis, replicationField } from '../support/redis-ask.js';
import { tempFolder } from '../support/temp.js';
import { serverPid } from '../setup/redis-sentinel.js';

const set = inject('redisSentinel');
const CLIENTS = 4;
/** Each key is sent this many times in a row: its first request, then repeats of it. */
const SENDS_PER_KEY = 3;

const [order] = validRecords('sales-orders');
/** A batch of its own per key: its message ids are its own, so a second publish would show. */
function batchFor(key: string): unknown[] {
  const record = structuredClone(order!) as { identifiers: { shipmentId: string } };
  record.identifiers.shipmentId = `SO-${key}`;
  return [record];
}

const stateLogs = new LogCapture();
let t: TestApp;

beforeAll(async () => {
  const state = await openRedisState({
    sentinel: { sentinels: set.sentinels, masterName: set.masterName },
    keyPrefix: uniquePrefix(),
    commandTimeoutMs: 500,
    log: createLogger({ level: 'info', destination: stateLogs }),
  });
  t = await createTestApp({
    sharedState: state,
    yaml: 'http:\n  abuse:\n    rateLimit: { requests: 1000000, windowSeconds: 60 }\n    maxInFlightBatches: 16\n',
  });
});

afterAll(async () => {
  await t?.close();
});

async function masterPort(): Promise<number> {
  const [, port] = (await sentinel(['sentinel', 'get-master-addr-by-name', set.masterName])) as [
    string,
    string,
  ];
  return Number(port);
}

describe('the shared state behind Redis Sentinel, at start-up', () => {
  it('starts unreachable when no sentinel answers, or none knows the master, naming the set in one warning (never a password)', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const logs = new LogCapture();
    const open = (sentinels: string[], masterName: string) =>
      openRedisState({
        sentinel: { sentinels, masterName, sentinelPassword: 'sentinel-secret-3e1' },
        password: 'master-secret-9b7',
        keyPrefix: uniquePrefix(),
        commandTimeoutMs: 500,
        log: createLogger({ level: 'info', destination: logs }),
      });
    for (const state of [
      await open([`127.0.0.1:${port}`], 'ingest'),
      await open(set.sentinels, 'no-such-master'),
    ]) {
      expect(state.reachable).toBe(false);
      expect(state.reachedOnce).toBe(false);
      await state.close();
    }
    const starting =
      'cannot reach the shared state at start-up: /readyz answers 503 and Idempotency-Key requests 503 until it is reached; retrying';
    expect(logs.lines.map((l) => [l.msg, l.sharedState])).toEqual([
      [starting, `sentinel://127.0.0.1:${port}/ingest`],
      [starting, `sentinel://${set.sentinels.join(',')}/no-such-master`],
    ]);
    expect(logs.raw.join('')).not.toMatch(/secret/);
  });
});

describe('serve behind Redis Sentinel, from the environment', () => {
  it('starts with REDIS_SENTINELS and REDIS_SENTINEL_MASTER, and says where the state is and which master it is on', async () => {
    const temp = tempFolder('sentinel-serve-');
    mkdirSync(path.join(temp.dir, 'pipelines'));
    const config = temp.write(
      'config.yaml',
      stringify({
        dataDirectory: path.join(temp.dir, 'data'),
        pipelinesDirectory: path.join(temp.dir, 'pipelines'),
      }),
    );
    const logs = new LogCapture();
    const service = await startService({
      env: {
        INGEST_CONFIG: config,
        INGEST_ENV: 'sandbox',
        PORT: '0',
        ADMIN_PORT: '0',
        REDIS_SENTINELS: set.sentinels.join(','),
        REDIS_SENTINEL_MASTER: set.masterName,
      },
      log: createLogger({ level: 'info', destination: logs }),
    });
    try {
      const where = `sentinel://${set.sentinels.join(',')}/${set.masterName}`;
      expect(logs.lines).toContainEqual(
        expect.objectContaining({ msg: 'shared state on Redis', sharedState: where }),
      );
      expect(logs.lines).toContainEqual(
        expect.objectContaining({
          msg: `shared state: on the master at 127.0.0.1:${await masterPort()}`,
          sharedState: where,
        }),
      );
    } finally {
      await service.stop();
    }
  });
});

describe('the shared state behind Redis Sentinel, its replica stalled', () => {
  it('answers 503 to a keyed request whose claim the replica did not acknowledge, and runs its retry once the replica is back', async () => {
    const replica = (await masterPort()) === 6390 ? 6391 : 6390;
    const pid = serverPid(set.folder, replica);
    const body = batchFor('stalled-1');
    const keyed = () =>
      t.post('sales-orders', body, { headers: { 'idempotency-key': 'stalled-1' } });
    process.kill(pid, 'SIGSTOP');
    let refused: Response;
    try {
      refused = await keyed();
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await answer(refused)).toMatchObject({ type: '/problems/idempotency-unavailable' });
    expect(stateLogs.lines.map((l) => l.msg)).toContain(
      'shared state: replicas do not acknowledge writes in time; Idempotency-Key requests answered 503 meanwhile',
    );
    // Its claim was taken back: the retry runs (not 409), once, and is replayed after.
    await expect
      .poll(async () => (await keyed()).status, { timeout: 10_000, interval: 50 })
      .toBe(202);
    const replay = await keyed();
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await t.topology.count()).toBe(1);
    await t.topology.messages(); // drained: the next test counts its own
  });
});

describe('the shared state behind Redis Sentinel, its master killed', () => {
  it('follows the promoted replica: keyed requests answered as promised or 503, then served again, no key published twice', async () => {
    const load = keyedLoad('killed');
    try {
      await expect
        .poll(() => load.freshAccepted(), { timeout: 15_000, interval: 20 })
        .toBeGreaterThan(20);
      const oldMaster = await masterPort();
      const killedAt = Date.now();
      process.kill(serverPid(set.folder, oldMaster), 'SIGKILL');
      const { newMaster, switchedAt } = await followed(load, oldMaster);
      await load.stop();
      const figures = await checked(load);
      console.log(
        `[redis-sentinel] master ${oldMaster} killed -> ${newMaster} promoted after ${switchedAt - killedAt} ms; ${report(figures)}`,
      );
      expect(figures.refused).toBeGreaterThan(0); // the outage was seen, and answered as documented
    } finally {
      await load.stop();
    }
  }, 90_000);
});

describe('the shared state behind Redis Sentinel, the old master back', () => {
  it('returns as a replica of the promoted master, and keyed requests are waited on it again', async () => {
    const master = await masterPort();
    const old = master === 6390 ? 6391 : 6390;
    const server = spawn('redis-server', [path.join(set.folder, `redis-${old}.conf`)], {
      stdio: 'ignore',
    });
    server.on('error', () => undefined);
    // The sentinels make it a replica of the promoted master, which then counts it.
    await expect
      .poll(() => replicationField(master, 'connected_slaves'), { timeout: 30_000, interval: 100 })
      .toBe('1');
    await expect
      .poll(() => replicationField(old, 'master_link_status'), { timeout: 30_000, interval: 100 })
      .toBe('up');
    const body = batchFor('healed-1');
    const keyed = () =>
      t.post('sales-orders', body, { headers: { 'idempotency-key': 'healed-1' } });
    // Stalled, it does not acknowledge the claim: refused, as before the failover.
    process.kill(server.pid!, 'SIGSTOP');
    let refused: Response;
    try {
      refused = await keyed();
    } finally {
      process.kill(server.pid!, 'SIGCONT');
    }
    expect(refused.status).toBe(503);
    await expect
      .poll(async () => (await keyed()).status, { timeout: 10_000, interval: 50 })
      .toBe(202);
    expect((await keyed()).headers.get('idempotent-replayed')).toBe('true');
    await t.topology.messages(); // drained: the next test counts its own
  });
});

describe('the shared state behind Redis Sentinel, a failover asked for (SENTINEL FAILOVER)', () => {
  it('follows the master the sentinels switch to while the old one stays up, under keyed load', async () => {
    const load = keyedLoad('switched');
    try {
      await expect
        .poll(() => load.freshAccepted(), { timeout: 15_000, interval: 20 })
        .toBeGreaterThan(20);
      const oldMaster = await masterPort();
      const askedAt = Date.now();
      // Refused (INPROG, NOGOODSLAVE) until the sentinels count the replica as good: asked again.
      await expect
        .poll(
          () => sentinel(['sentinel', 'failover', set.masterName]).catch((e: Error) => e.message),
          {
            timeout: 30_000,
            interval: 100,
          },
        )
        .toBe('OK');
      const { newMaster, switchedAt } = await followed(load, oldMaster);
      await load.stop();
      const figures = await checked(load);
      console.log(
        `[redis-sentinel] SENTINEL FAILOVER ${oldMaster} -> ${newMaster} switched after ${switchedAt - askedAt} ms; ${report(figures)}`,
      );
    } finally {
      await load.stop();
    }
  }, 90_000);
});

function keyedLoad(prefix: string): KeyedLoad {
  return startKeyedLoad({
    post: (body, key) => t.post('sales-orders', body, { headers: { 'idempotency-key': key } }),
    batchFor,
    prefix,
    clients: CLIENTS,
    sendsPerKey: SENDS_PER_KEY,
  });
}

/** Waits until the sentinels name another master, the service is on it, and fresh keys run again. */
async function followed(load: KeyedLoad, oldMaster: number) {
  await expect.poll(masterPort, { timeout: 30_000, interval: 50 }).not.toBe(oldMaster);
  const newMaster = await masterPort();
  const switchedAt = Date.now();
  await expect
    .poll(
      () =>
        stateLogs.lines.some(
          (l) => l.msg === `shared state: on the master at 127.0.0.1:${newMaster}`,
        ),
      { timeout: 30_000, interval: 20 },
    )
    .toBe(true);
  await expect
    .poll(() => load.freshAccepted(switchedAt), { timeout: 30_000, interval: 20 })
    .toBeGreaterThan(20);
  return { newMaster, switchedAt };
}

/** Every answer as promised, no key run twice, every accepted record queued once. */
async function checked(load: KeyedLoad) {
  const queued = (await t.topology.messages()).map((m) => String(m.properties.messageId));
  const figures = keyedLoadFigures(load.sent, queued);
  expect(figures.unexpected).toEqual([]);
  expect(figures.ranTwice).toEqual([]);
  expect(figures.duplicates).toBe(0);
  expect(figures.missing).toEqual([]);
  return figures;
}

function report(f: ReturnType<typeof keyedLoadFigures>): string {
  return (
    `longest gap without a keyed 202: ${f.gap} ms; requests ${f.requests}, 202 ${f.accepted}, ` +
    `503 ${f.refused}, 409 ${f.inUse}, keys ${f.keys}, duplicates ${f.duplicates}; ` +
    `load ${execFileSync('uptime').toString().trim()}`
  );
}

/** A command to the first sentinel of the set. */
function sentinel(command: string[]): Promise<unknown> {
  return askRedis(Number(set.sentinels[0]!.split(':')[1]), command);
}
