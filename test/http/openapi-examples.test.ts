/**
 * "Try it out" in /docs sends the request examples of /openapi.json with the demo credential:
 * on a development service (the demo tenant, the embedded publisher) every one must be accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { buildHttpApp } from '../../src/http/build.js';
import { createLogger } from '../../src/log.js';
import { createPublisher } from '../../src/publish/index.js';
import type { Publisher } from '../../src/publish/publisher.js';
import { tempFolder } from '../support/temp.js';

interface Doc {
  paths: Record<
    string,
    {
      post?: {
        requestBody: {
          content: Record<string, { examples?: Record<string, { value: unknown }> }>;
        };
      };
    }
  >;
}

const DEMO = `Basic ${Buffer.from('DEMO:demo-api-key').toString('base64')}`;
let publisher: Publisher;
let app: ReturnType<typeof buildHttpApp>['app'];
let doc: Doc;

beforeAll(async () => {
  const folder = tempFolder('openapi-examples-');
  const config = loadConfig({
    env: {
      INGEST_ENV: 'development',
      INGEST_CONFIG: folder.write('config.yaml', `dataDirectory: ${folder.dir}\n`),
    },
  });
  const log = createLogger({ level: 'silent' });
  publisher = createPublisher(config, log);
  await publisher.start();
  ({ app } = buildHttpApp(config, publisher, log));
  doc = (await (await app.request('/openapi.json')).json()) as Doc;
});
afterAll(() => publisher?.close());

describe('the request examples of /openapi.json', () => {
  it('are there for every batch endpoint and media type, and each is accepted (202) with the demo credential', async () => {
    const sent: string[] = [];
    for (const [route, item] of Object.entries(doc.paths)) {
      // The batch endpoints: the partner API's two actions (resend, test) take no body.
      if (!item.post?.requestBody) continue;
      for (const [type, media] of Object.entries(item.post.requestBody.content)) {
        const example = media.examples?.demo?.value;
        expect(example, `${route} ${type} has an example`).toBeDefined();
        const response = await app.request(route, {
          method: 'POST',
          headers: { authorization: DEMO, 'content-type': type },
          body: typeof example === 'string' ? example : JSON.stringify(example),
        });
        expect(response.status, `${route} ${type}: ${await response.clone().text()}`).toBe(202);
        const body = (await response.json()) as { recordCount: number };
        expect(body.recordCount).toBeGreaterThan(0);
        sent.push(`${route} ${type}`);
      }
    }
    expect(sent).toHaveLength(15); // five kinds: v2 JSON, v1 JSON, v1 CSV
  });
});
