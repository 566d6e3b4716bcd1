import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PublishFailed } from '../../src/errors.js';
import { createEmbeddedPublisher } from '../../src/publish/embedded.js';
import { createNonePublisher } from '../../src/publish/none.js';
import { captureLog, makeMessages } from './helpers.js';

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

async function tempFolder(): Promise<string> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'embedded-publisher-'));
  folders.push(folder);
  return folder;
}

async function readLines(directory: string): Promise<Array<Record<string, unknown>>> {
  const files = await readdir(directory);
  expect(files).toHaveLength(1);
  expect(files[0]).toMatch(/^messages-\d{4}-\d{2}-\d{2}\.ndjson$/);
  const text = await readFile(path.join(directory, files[0]!), 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('embedded publisher', () => {
  it('creates the folder and appends one parseable line per message', async () => {
    const directory = path.join(await tempFolder(), 'nested', 'outbox');
    const publisher = createEmbeddedPublisher({ directory }, captureLog().log);
    await publisher.start();
    expect(await publisher.readiness()).toEqual({ ready: true, problems: [] });

    const messages = makeMessages(3, 'sales-orders.b-1');
    await publisher.publish(messages);
    await publisher.close();

    const lines = await readLines(directory);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({
      messageId: messages[0]!.messageId,
      routingKey: 'sales-orders.b-1',
      type: 'sales-orders',
      correlationId: messages[0]!.correlationId,
      timestamp: new Date(messages[0]!.timestamp).toISOString(),
      headers: { 'business-id': 'b-1', source: 'test' },
      record: JSON.parse(messages[0]!.body.toString('utf8')),
    });
  });

  it('lands every concurrent call, sharing fsyncs between calls', async () => {
    const directory = await tempFolder();
    const publisher = createEmbeddedPublisher({ directory }, captureLog().log);
    await publisher.start();
    const calls = Array.from({ length: 50 }, (_, call) => makeMessages(4, `k.${call}`));

    // Calls arrive on separate turns of the event loop, as HTTP requests do, while flushes run.
    const pending: Array<Promise<void>> = [];
    for (const messages of calls) {
      pending.push(publisher.publish(messages));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(pending);

    const lines = await readLines(directory);
    expect(lines).toHaveLength(200);
    expect(new Set(lines.map((line) => line.messageId))).toEqual(
      new Set(calls.flat().map((m) => m.messageId)),
    );
    // Each call's lines stay together, in order.
    for (const messages of calls) {
      const at = lines.findIndex((line) => line.messageId === messages[0]!.messageId);
      expect(lines.slice(at, at + 4).map((line) => line.messageId)).toEqual(
        messages.map((m) => m.messageId),
      );
    }
    expect(publisher.flushCount).toBeGreaterThan(0);
    expect(publisher.flushCount).toBeLessThan(calls.length);
  });

  it('rejects with PublishFailed when the folder cannot be written, and reports it unready', async () => {
    // A path under a regular file fails even for root, whom permission bits do not stop.
    const blocker = path.join(await tempFolder(), 'not-a-folder');
    await writeFile(blocker, 'x');
    const directory = path.join(blocker, 'outbox');
    const { log, text } = captureLog();
    const publisher = createEmbeddedPublisher({ directory }, log);
    await publisher.start();

    const failure = publisher.publish(makeMessages(2, 'k'));
    await expect(failure).rejects.toBeInstanceOf(PublishFailed);
    await expect(failure).rejects.toMatchObject({ status: 503 });
    const check = await publisher.readiness();
    expect(check.ready).toBe(false);
    expect(check.problems[0]).toMatch(/not writable \(ENOTDIR\)/);
    expect(text()).toMatch(/could not write the embedded outbox/);
  });

  it('refuses new batches after close', async () => {
    const publisher = createEmbeddedPublisher({ directory: await tempFolder() }, captureLog().log);
    await publisher.start();
    await publisher.close();
    await expect(publisher.publish(makeMessages(1, 'k'))).rejects.toThrow(PublishFailed);
  });
});

describe('none publisher', () => {
  it('accepts anything, stores nothing and is always ready', async () => {
    const publisher = createNonePublisher();
    await publisher.start();
    await expect(publisher.publish(makeMessages(2, 'k'))).resolves.toBeUndefined();
    expect(await publisher.readiness()).toEqual({ ready: true, problems: [] });
    await publisher.close();
  });
});
