import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/api-keys.js';
import { ordersCsv } from '../drops/stores/drop-contract.js';
import { declareTestTopology, type TestTopology } from '../support/broker.js';
import { killIfRunning, startServe, stopCli, type CliWorker } from '../support/cli-worker.js';
import { basicAuth } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

/**
 * Key rotation (spec §5.6) without an outage: a real `serve` process, its config file edited and
 * SIGHUP sent. Two keys work during the rotation, the old one stops when it is removed, a batch
 * in flight during the reload completes, and a broken edit keeps the running configuration.
 */
const OLD = 'rotation-old-key-5be1c0a7d3';
const NEW = 'rotation-new-key-93f04ad1e6';
const ORDERS = 8000; // two CSV lines, one v2 record each: long enough to be in flight across a reload
const csv = (tag: string, orders: number) => ordersCsv(tag, orders).replaceAll('ACME,', 'DEMO,');

describe('serve reloads tenants and onboarding profiles on SIGHUP', () => {
  let topology: TestTopology;
  let service: CliWorker | undefined;
  beforeAll(async () => {
    topology = await declareTestTopology({ bindingKeys: ['#'], prefix: 'reload' });
  });
  afterAll(async () => {
    killIfRunning(service);
    await topology.cleanup();
  });

  it('rotates a key by editing the file: both keys during the rotation, in-flight batches complete, a broken edit is refused', async () => {
    const temp = tempFolder('reload-');
    const pipelines = path.join(temp.dir, 'pipelines');
    mkdirSync(pipelines);
    const [oldHash, newHash] = await Promise.all([hashApiKey(OLD), hashApiKey(NEW)]);
    const base = [
      `dataDirectory: ${temp.dir}/data`,
      `pipelinesDirectory: ${pipelines}`,
      'http: { bodyLimitBytes: 52428800, maxRecordsPerBatch: 100000 }',
      'broker:',
      `  exchange: ${topology.exchange}`,
      '  queues: []',
    ].join('\n');
    const write = (tenant: string, extra = '') =>
      temp.write('config.yaml', `${base}\ntenants:\n  - businessId: DEMO\n${tenant}\n${extra}`);
    const file = write(`    apiKeyHash: "${oldHash}"`);
    const started = await startServe(file);
    service = started.service;
    const running = started.service;
    const { url } = started;
    const post = (key: string, body: string, tag = '') =>
      fetch(`${url}/api/v1/sales-orders`, {
        method: 'POST',
        headers: {
          'content-type': 'text/csv',
          authorization: basicAuth({ businessId: 'DEMO', apiKey: key }),
          ...(tag && { 'x-correlation-id': tag }),
        },
        body,
      });
    const reloads = (message: string) => running.lines.filter((l) => l.msg === message);
    const hangUp = async (message: string, count: number) => {
      running.child.kill('SIGHUP');
      await expect
        .poll(() => reloads(message).length, { timeout: 10_000, message: running.stderr() })
        .toBe(count);
      return reloads(message).at(-1)!;
    };

    expect((await post(OLD, csv('RLD-A', 1))).status).toBe(202);
    expect((await post(NEW, csv('RLD-B', 1))).status).toBe(401);

    // A large batch in flight (mid-publish) while the file changes and SIGHUP arrives.
    let settled = false;
    const inFlight = post(OLD, csv(`RLD-BIG-${Date.now().toString(36)}`, ORDERS)).finally(
      () => void (settled = true),
    );
    inFlight.catch(() => undefined); // awaited below
    await expect.poll(() => topology.count(), { timeout: 60_000, interval: 20 }).toBeGreaterThan(2);
    write(`    apiKeyHashes: ["${newHash}", "${oldHash}"]`);
    const rotating = await hangUp('configuration reloaded', 1);
    expect(settled).toBe(false); // the reload happened while the batch was in flight
    expect(rotating).toMatchObject({
      level: 'info',
      tenants: { count: 1, added: [], removed: [], keysChanged: ['DEMO'], keys: 2 },
    });
    const [viaNew, viaOld] = await Promise.all([
      post(NEW, csv('RLD-C', 1)),
      post(OLD, csv('RLD-D', 1)),
    ]);
    expect([viaNew.status, viaOld.status]).toEqual([202, 202]);

    const big = await inFlight;
    expect(big.status).toBe(202);
    expect(((await big.json()) as { recordCount: number }).recordCount).toBe(ORDERS);

    // The rotation ends: the old key goes; the profile now ignores unknown v1 columns.
    write(
      `    apiKeyHash: "${newHash}"`,
      'onboarding:\n  DEMO:\n    legacy: { unknownFields: ignore }\n',
    );
    const rotated = await hangUp('configuration reloaded', 2);
    expect(rotated).toMatchObject({
      tenants: { keysChanged: ['DEMO'], keys: 1 },
      onboarding: { changed: ['DEMO'] },
      restartNeeded: [],
    });
    expect((await post(OLD, csv('RLD-E', 1))).status).toBe(401);
    const extra = csv('RLD-F', 1)
      .split('\n')
      .map((line, i) => (line === '' ? line : `${line},${i === 0 ? 'Channel' : 'web'}`))
      .join('\n');
    const ignoring = await post(NEW, extra);
    expect(ignoring.status).toBe(202);
    expect(await ignoring.json()).toMatchObject({ ignoredFields: ['Channel'] });

    // A broken edit (a hash cut short): refused, named, and the running configuration kept.
    write(`    apiKeyHash: "${oldHash.slice(0, -6)}"`);
    const refused = await hangUp(
      'configuration reload refused: the running configuration is kept',
      1,
    );
    expect(refused).toMatchObject({
      level: 'error',
      problems: [{ file, field: 'tenants[0].apiKeyHash' }],
    });
    expect((await post(NEW, csv('RLD-G', 1))).status).toBe(202);
    expect((await post(OLD, csv('RLD-H', 1))).status).toBe(401);
    expect(reloads('configuration reloaded')).toHaveLength(2);

    // Logs say what changed, never a key or a hash.
    const logged = running.lines.map((line) => JSON.stringify(line)).join('\n');
    for (const secret of [OLD, NEW, oldHash, newHash, oldHash.slice(0, -6)])
      expect(logged).not.toContain(secret.slice(-20));
    expect(logged).not.toContain('$scrypt$');

    expect((await stopCli(running, 'SIGTERM', 30_000)).exit).toBe('code 0');
  }, 180_000);
});
