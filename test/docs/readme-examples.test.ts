import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { buildHttpApp } from '../../src/http/build.js';
import { createLogger } from '../../src/log.js';
import { createPublisher } from '../../src/publish/index.js';
import type { Publisher } from '../../src/publish/publisher.js';
import { tempFolder } from '../support/temp.js';

/**
 * The README's curl examples, run as written against the app `npm start` builds (the embedded
 * defaults; the sandbox where the README starts it so), through `app.request()`: no broker, no
 * socket. A fixture renamed or a default changed breaks this before it breaks a newcomer.
 */

const ROOT = new URL('../../', import.meta.url);
const temp = tempFolder();
const publishers: Publisher[] = [];
afterEach(async () => {
  for (const publisher of publishers.splice(0)) await publisher.close();
});

interface Example {
  readonly sandbox: boolean;
  readonly user: string;
  readonly contentType: string;
  readonly file: string;
  readonly path: string;
}

/** Every `curl` of the README's shell blocks, with the `INGEST_ENV` of the block it is in. */
function examples(): Example[] {
  const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((match) => match[1]!);
  return blocks.flatMap((block) => {
    const sandbox = /INGEST_ENV=sandbox/.test(block);
    return block
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .filter((line) => line.startsWith('curl '))
      .map((line) => ({
        sandbox,
        user: /-u (\S+)/.exec(line)![1]!,
        contentType: /content-type: ([^']+)'/.exec(line)![1]!,
        file: /--data(?:-binary)? @(\S+)/.exec(line)![1]!,
        path: new URL(/(http:\/\/\S+)/.exec(line)![1]!).pathname,
      }));
  });
}

describe("the README's examples", () => {
  it('shows a v2 JSON, a v1 CSV and a sandbox request', () => {
    expect(examples().map((e) => [e.sandbox, e.path, e.contentType])).toEqual([
      [false, '/api/v2/sales-orders', 'application/json'],
      [false, '/api/v1/sales-orders', 'text/csv'],
      [true, '/api/v2/sales-orders', 'application/json'],
    ]);
  });

  it.each(examples().map((example) => [example.path, example.file, example]))(
    'POST %s with %s is answered 202',
    async (_path, _file, example) => {
      const env = {
        ...(example.sandbox ? { INGEST_ENV: 'sandbox' } : {}),
        INGEST_CONFIG: temp.write('data.yaml', `dataDirectory: ${temp.dir}/data\n`),
      };
      const config = loadConfig({ env });
      const log = createLogger({ level: 'silent' });
      const publisher = createPublisher(config, log);
      publishers.push(publisher);
      await publisher.start();
      const { app } = buildHttpApp(config, publisher, log);
      const response = await app.request(example.path, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(example.user).toString('base64')}`,
          'content-type': example.contentType,
        },
        body: readFileSync(new URL(example.file, ROOT)),
      });
      const body = (await response.json()) as { success?: boolean; recordCount?: number };
      expect(response.status, JSON.stringify(body)).toBe(202);
      expect(body.success).toBe(true);
      expect(body.recordCount).toBeGreaterThan(0);
      if (example.sandbox) expect(response.headers.get('ingest-environment')).toBe('sandbox');
    },
  );
});
