import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { buildHttpApp } from '../../src/http/build.js';
import type { Publisher } from '../../src/publish/publisher.js';
import { LogCapture } from '../support/http-app.js';

/**
 * A bug cannot be produced with the real parts, so this one publisher is a stand-in that
 * throws a plain Error carrying a secret-looking message: the one fake in the HTTP suite.
 */
const buggyPublisher: Publisher = {
  name: 'embedded',
  target: 'nowhere',
  start: async () => {},
  publish: async () => {
    throw new Error('boom: amqp://admin:hunter2@db.internal');
  },
  readiness: async () => ({ ready: true, problems: [] }),
  close: async () => {},
};

describe('an unexpected error', () => {
  it('is answered 500 problem details without the message, logged with the correlation id, and the service keeps serving', async () => {
    const logs = new LogCapture();
    const { app } = buildHttpApp(
      loadConfig({ env: {} }),
      buggyPublisher,
      createLogger({ destination: logs }),
    );
    const demo = (await import('../../fixtures/demo/sales-orders.json', { with: { type: 'json' } }))
      .default;
    const post = () =>
      app.request('/api/v2/sales-orders', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Basic ${Buffer.from('DEMO:demo-api-key').toString('base64')}`,
          'x-correlation-id': 'bug-1',
        },
        body: JSON.stringify(demo),
      });
    const response = await post();
    expect(response.status).toBe(500);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const text = await response.text();
    expect(text).not.toContain('hunter2');
    expect(JSON.parse(text)).toMatchObject({ type: '/problems/internal-error', status: 500 });
    const logged = logs.lines.find((l) => l.msg === 'request failed');
    expect(logged).toMatchObject({ correlationId: 'bug-1', level: 'error' });
    expect((await post()).status).toBe(500);
    expect((await app.request('/healthz')).status).toBe(200);
  });
});
