import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeDrops } from '../../src/drops/probe.js';
import { nodeAddress } from '../../src/broker/connection.js';
import { AMQP_URL } from '../support/broker.js';
import { createLogger } from '../../src/log.js';
import { openDrops } from '../../src/drops/open.js';
import { buildHttpApp } from '../../src/http/build.js';
import { createSftpDrop } from '../../src/stores/sftp/index.js';
import { createTestApp, LogCapture, type TestApp } from '../support/http-app.js';
import { tempFolder } from '../support/temp.js';

const folder = tempFolder('readyz-');
const pipeline = (name: string, path: string) =>
  folder.write(
    `pipelines/${name}.yaml`,
    [
      `name: ${name}`,
      'businessId: ACME',
      'kind: sales-orders',
      'format: v2-json',
      'source:',
      '  type: local',
      `  path: ${path}`,
    ].join('\n'),
  );

describe('GET /readyz with drops', () => {
  let t: TestApp;
  beforeAll(async () => {
    mkdirSync(`${folder.dir}/pipelines`);
    mkdirSync(`${folder.dir}/drop-ok`);
    pipeline('reachable', `${folder.dir}/drop-ok`);
    t = await createTestApp({ yaml: `pipelinesDirectory: ${folder.dir}/pipelines` });
  });
  afterAll(() => t.close());

  it('is 200 and lists each drop as reachable when the broker and every drop answer', async () => {
    const drops = openDrops(t.config);
    const { admin: app } = buildHttpApp(t.config, t.publisher, createLogger({ level: 'silent' }), {
      drops,
    });
    const response = await app.request('/readyz');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: 'ready',
      broker: { node: nodeAddress(AMQP_URL) },
      drops: [{ pipeline: 'reachable', source: 'local', reachable: true, ms: expect.any(Number) }],
    });
  });

  it("is 200 while a partner's drop cannot be listed, naming it in the body by pipeline and reason, without its path", async () => {
    // A regular file where the drop folder should be.
    const notAFolder = folder.write('not-a-folder', 'x');
    pipeline('broken', notAFolder);
    const drops = openDrops(t.config);
    const { admin: app } = buildHttpApp(t.config, t.publisher, createLogger({ level: 'silent' }), {
      drops,
    });
    // One partner's outage: this instance still serves its traffic (issue 38, item 6).
    const response = await app.request('/readyz');
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(JSON.parse(text)).toMatchObject({
      status: 'ready',
      drops: expect.arrayContaining([
        {
          pipeline: 'broken',
          source: 'local',
          reachable: false,
          ms: expect.any(Number),
          problem: 'drop-not-a-folder',
        },
      ]),
    });
    expect(text).not.toContain(folder.dir);
  });
});

describe('GET /readyz with a misconfigured drop', () => {
  let t: TestApp;
  const dir = `${folder.dir}/misconfigured-pipelines`;
  beforeAll(async () => {
    mkdirSync(dir);
    mkdirSync(`${folder.dir}/drop-blocked`);
    writeFileSync(`${folder.dir}/drop-blocked/failed`, 'meant as a folder');
    const write = (name: string, path: string) =>
      folder.write(
        `misconfigured-pipelines/${name}.yaml`,
        [
          `name: ${name}`,
          'businessId: ACME',
          'kind: sales-orders',
          'format: v2-json',
          'source:',
          '  type: local',
          `  path: ${path}`,
        ].join('\n'),
      );
    write('missing', `${folder.dir}/no-such-drop`);
    write('blocked', `${folder.dir}/drop-blocked`);
    t = await createTestApp({ yaml: `pipelinesDirectory: ${dir}` });
  });
  afterAll(() => t.close());

  it('is 200 naming, in the body, a drop whose folder does not exist and one with a file where failed/ must be', async () => {
    const { admin: app } = buildHttpApp(t.config, t.publisher, createLogger({ level: 'silent' }), {
      drops: openDrops(t.config),
    });
    const response = await app.request('/readyz');
    expect(response.status).toBe(200);
    const text = await response.text();
    const { drops } = JSON.parse(text) as { drops: Array<Record<string, unknown>> };
    expect(drops).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ pipeline: 'missing', problem: 'drop-folder-missing' }),
        expect.objectContaining({ pipeline: 'blocked', problem: 'settle-folder-is-a-file' }),
      ]),
    );
    expect(text).not.toContain(folder.dir);
  });
});

describe('probeDrops', () => {
  // A server that accepts TCP and never says a word: an SFTP handshake waits on it.
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  beforeAll(() => new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve)));
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('reports an SFTP drop that does not answer as timed out, within the bound, and shares a probe in flight', async () => {
    const { port } = silent.address() as net.AddressInfo;
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', `${folder.dir}/key`]);
    const store = createSftpDrop({
      host: '127.0.0.1',
      port,
      username: 'u',
      privateKey: readFileSync(`${folder.dir}/key`),
      hostKeyFingerprints: ['SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU'],
      path: 'drop',
    });
    const started = performance.now();
    const [first, second] = await Promise.all([
      probeDrops([{ pipeline: 'silent', store }], 300),
      probeDrops([{ pipeline: 'silent', store }], 300),
    ]);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(first).toEqual([
      {
        pipeline: 'silent',
        source: 'sftp',
        reachable: false,
        ms: expect.any(Number),
        problem: 'timed out after 300 ms',
      },
    ]);
    expect(second![0]).toBe(first![0]);
    for (const socket of sockets) socket.destroy();
    await store.close().catch(() => undefined);
  });
});

describe('GET /readyz logging', () => {
  it('logs a change of state once, at warn, with the reasons and no stack; not every probe; a drop outage is no change of state', async () => {
    const gone = folder.write('gone-drop', 'a file where the drop folder should be');
    const dir = `${folder.dir}/logging-pipelines`;
    mkdirSync(dir);
    folder.write(
      'logging-pipelines/missing.yaml',
      [
        'name: missing',
        'businessId: ACME',
        'kind: sales-orders',
        'format: v2-json',
        'source:',
        '  type: local',
        `  path: ${gone}`,
      ].join('\n'),
    );
    // Port 1: nothing listens there: the broker is unreachable, the instance not ready.
    const t = await createTestApp({
      yaml: `pipelinesDirectory: ${dir}`,
      amqpUrl: 'amqp://guest:guest@127.0.0.1:1',
    });
    try {
      const logs = new LogCapture();
      const { admin: app } = buildHttpApp(
        t.config,
        t.publisher,
        createLogger({ destination: logs }),
        {
          drops: openDrops(t.config),
        },
      );
      for (let probe = 0; probe < 3; probe++)
        expect((await app.request('/readyz')).status).toBe(503);
      const warnings = logs.lines.filter((l) => l.level === 'warn');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ msg: 'not ready: /readyz answers 503' });
      expect(String(warnings[0]!.problems)).toContain('127.0.0.1:1');
      expect(String(warnings[0]!.problems)).not.toContain('drop "missing"');
      expect(logs.raw.join('\n')).not.toContain('"stack"');
    } finally {
      await t.close();
    }
  });
});

describe('GET /readyz without a broker', () => {
  it('answers "broker: unreachable" without naming its host, port or vhost; the log has them', async () => {
    // Port 1: nothing listens there, so every connection is refused at once.
    const t = await createTestApp({ amqpUrl: 'amqp://guest:guest@127.0.0.1:1/private-vhost' });
    try {
      const response = await t.admin.request('/readyz');
      expect(response.status).toBe(503);
      const body = await response.text();
      expect(JSON.parse(body)).toMatchObject({ detail: 'Not ready: broker: unreachable' });
      for (const secret of ['127.0.0.1', ':1', 'private-vhost', 'guest'])
        expect(body).not.toContain(secret);
      const warning = t.logs.lines.find((l) => l.msg === 'not ready: /readyz answers 503');
      expect(String(warning?.problems)).toContain('127.0.0.1:1/private-vhost');
    } finally {
      await t.close();
    }
  });
});
