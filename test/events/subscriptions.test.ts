import { describe, expect, it } from 'vitest';
import { afterFailure, retryDelays } from '../../src/events/retry.js';
import {
  compilePattern,
  endpointLabel,
  resolveEndpoints,
  webhookEndpointId,
  webhookProblems,
} from '../../src/events/subscriptions.js';
import { ConfigError } from '../../src/operator-errors.js';
import { createLanes, BUSY } from '../../src/events/lanes.js';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;

describe('compilePattern', () => {
  it.each([
    ['sales-order.*', 'sales-order.shipped', true],
    ['sales-order.*', 'sales-order.shipped.late', false],
    ['sales-order.*', 'purchase-order.received', false],
    ['*.received', 'return-goods.received', true],
    ['**', 'work-order.completed', true],
    ['sales-order.**', 'sales-order.shipped.late', true],
    ['purchase-order.received', 'purchase-order.received', true],
    ['purchase-order.received', 'purchase-orderXreceived', false],
  ])('%s against %s: %s', (pattern, type, expected) => {
    expect(compilePattern(pattern)(type)).toBe(expected);
  });
});

describe('retry schedule', () => {
  const schedule = [0, 5000, 300000];
  it('waits schedule[n] after the n-th failure, then gives up', () => {
    expect(afterFailure(schedule, 1)).toEqual({ action: 'retry', delayMs: 5000, attempt: 2 });
    expect(afterFailure(schedule, 2)).toEqual({ action: 'retry', delayMs: 300000, attempt: 3 });
    expect(afterFailure(schedule, 3)).toEqual({ action: 'dead' });
  });
  it('needs one queue per distinct delay after the first, plus the defer delay', () => {
    expect(retryDelays([0, 5000, 5000, 300000], 5000)).toEqual([5000, 300000]);
    expect(retryDelays([0], 1000)).toEqual([1000]);
  });
});

describe('resolveEndpoints', () => {
  const tenant = (webhooks: unknown[]) => ({
    environment: 'production' as const,
    tenants: [{ businessId: 'ACME', webhooks: webhooks as never }],
  });
  const hook = {
    url: 'https://hooks.acme.example/in?token=abc',
    secret: [{ env: 'OLD' }, { env: 'NEW' }],
    events: ['sales-order.*'],
    enabled: true,
    allowPrivateNetwork: false,
  };

  it('resolves both secrets of a rotation and keeps only the host for logs', () => {
    const endpoints = resolveEndpoints(tenant([hook]), { OLD: SECRET, NEW: SECRET });
    const [endpoint] = endpoints.get('ACME') ?? [];
    expect(endpoint?.keys).toHaveLength(2);
    expect(endpoint?.host).toBe('hooks.acme.example');
    expect(endpoint?.matches('sales-order.shipped')).toBe(true);
    expect(endpoint?.matches('work-order.completed')).toBe(false);
  });

  it('names the field of a missing or malformed secret, never its value', () => {
    const run = (env: NodeJS.ProcessEnv) => {
      try {
        resolveEndpoints(tenant([hook]), env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).problems;
      }
      throw new Error('expected a ConfigError');
    };
    expect(run({ OLD: SECRET })).toEqual([
      {
        file: 'environment variable NEW',
        field: 'tenants[0].webhooks[0].secret[1]',
        message: 'Not set (tenant ACME, endpoint hooks.acme.example)',
      },
    ]);
    const problems = run({ OLD: SECRET, NEW: 'whsec_short-and-wrong' });
    expect(JSON.stringify(problems)).not.toContain('short-and-wrong');
  });
});

describe('lanes', () => {
  it('runs at most `concurrency` per endpoint, queues as many, and answers busy beyond once stalled', async () => {
    const lanes = createLanes(1, 50);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = lanes.run('a', () => held.then(() => 'first'));
    const second = lanes.run('a', async () => 'second');
    // Rate unknown and not stalled yet: a third may wait; once stalled it is sent back busy.
    const third = lanes.run('a', async () => 'third');
    expect(await third).toBe(BUSY);
    expect(await lanes.run('a', async () => 'fourth')).toBe(BUSY);
    // Another endpoint is not held back.
    expect(await lanes.run('b', async () => 'other')).toBe('other');
    release();
    expect(await Promise.all([first, second])).toEqual(['first', 'second']);
    expect(lanes.backlog('a')).toBe(0);
  });
});

describe('endpoint names and ids', () => {
  const url = 'https://hooks.acme.example/in?token=secret';
  it('name a webhook by its id or its place in the list, with the host only', () => {
    expect(endpointLabel({ id: 'erp', url }, 3)).toBe('erp (hooks.acme.example)');
    expect(endpointLabel({ url }, 3)).toBe('webhooks[3] (hooks.acme.example)');
  });

  it('keep an id across a URL change when the webhook has one, never otherwise', () => {
    const moved = 'https://new.acme.example/in';
    expect(webhookEndpointId('ACME', { id: 'erp', url })).toBe(
      webhookEndpointId('ACME', { id: 'erp', url: moved }),
    );
    expect(webhookEndpointId('ACME', { url })).not.toBe(webhookEndpointId('ACME', { url: moved }));
    expect(webhookEndpointId('ACME', { id: 'erp', url })).not.toBe(
      webhookEndpointId('BETA', { id: 'erp', url }),
    );
  });
});

describe('production rules lint can check without DNS', () => {
  const problems = (url: string) =>
    webhookProblems({
      environment: 'production',
      tenants: [
        {
          businessId: 'ACME',
          webhooks: [
            {
              url,
              secret: { env: 'X' },
              events: ['**'],
              enabled: true,
              allowPrivateNetwork: false,
            },
          ],
        },
      ],
    }).map((p) => p.message);

  it.each([
    'https://localhost/hook',
    'https://localhost./hook',
    'https://LOCALHOST../hook',
    'https://api.localhost./hook',
    'https://127.0.0.1/hook',
    'https://10.1.2.3/hook',
    'https://169.254.169.254/latest',
    'https://[::1]/hook',
  ])('refuses %s', (url) => {
    expect(problems(url)).toEqual([
      'Loopback or private destination refused in production (or set allowPrivateNetwork: true)',
    ]);
  });

  it('accepts a public name or address (the runtime guard still checks what a name resolves to)', () => {
    expect(problems('https://hooks.acme.example/in')).toEqual([]);
    expect(problems('https://93.184.215.14/in')).toEqual([]);
  });
});
