import { describe, expect, it } from 'vitest';
import { historyOf } from '../../src/http/partner-reads.js';
import type { EventWithAttempts } from '../../src/history/store.js';
import { eventsPage } from '../../src/portal/pages/events.js';
import { webhooksPage } from '../../src/portal/pages/webhooks.js';

/**
 * The events and endpoints pages alone: what an endpoint answered and what a webhook's
 * configuration says are other people's text, shown escaped and cut short.
 */
const viewer = { role: 'business', businessId: 'ACME', csrf: 'csrf-token-1' } as const;
const HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)>';

const event: EventWithAttempts = {
  id: 'evt-1/"x"',
  type: 'sales-order.shipped',
  businessId: 'ACME',
  payload: {},
  receivedAt: new Date('2026-03-02T14:05:09Z'),
  correlationId: 'c-1',
  attempts: [
    {
      id: 'a1',
      eventId: 'evt-1/"x"',
      businessId: 'ACME',
      endpoint: 'erp',
      at: new Date('2026-03-02T14:05:10Z'),
      end: 'failed',
      status: 500,
      durationMs: 12,
      responseExcerpt: `${HOSTILE}${'y'.repeat(1000)}`,
    },
  ],
};

describe('the events page', () => {
  it("escapes an endpoint's answer, cuts it short, and posts Resend with the CSRF token", async () => {
    const response = eventsPage({
      viewer,
      page: { items: [event] },
      endpoints: [
        {
          businessId: 'ACME',
          endpoint: `https://erp.example/${HOSTILE}`,
          delivered: 3,
          retrying: 1,
          dead: 0,
          attempts: 8,
          deliveredAttempts: 3,
        },
      ],
      types: ['sales-order.shipped'],
      type: '',
      paged: false,
    });
    const text = await response.text();
    expect(text).not.toContain('<script>alert');
    expect(text).not.toContain('<img src=x');
    expect(text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(text).not.toContain('y'.repeat(300));
    expect(text).toContain(
      '<form method="post" action="/portal/events/evt-1%2F%22x%22/resend">\n<input type="hidden" name="csrf" value="csrf-token-1">',
    );
    expect(text).toContain('<a class="id" href="/portal/batches/c-1">');
    // Each endpoint's last day comes before the list, its URL escaped too.
    expect(text.indexOf('Per endpoint, last 24 hours')).toBeLessThan(text.indexOf('evt-1/'));
    expect(text).toMatch(
      /<td class="number">3<\/td>\s*<td class="number">1<\/td>\s*<td class="number">0<\/td>/,
    );
    expect(text).toContain('<strong>37.5 %</strong>');
  });
});

describe('the events page and test events', () => {
  it('offers no Resend on a webhook.test event (a test is sent anew from the endpoints page)', async () => {
    const test = { ...event, id: 'test_1', type: 'webhook.test' };
    const text = await eventsPage({
      viewer,
      page: { items: [test, { ...event, id: 'evt-2' }] },
      types: ['webhook.test'],
      type: '',
      paged: false,
      endpoints: [],
    }).text();
    expect(text).not.toContain('/portal/events/test_1/resend');
    expect(text).toContain('/portal/events/evt-2/resend');
  });
});

describe('the endpoints page', () => {
  it('escapes what the configuration says and shows no button without endpoints', async () => {
    const page = webhooksPage({
      viewer,
      endpoints: [
        {
          id: 'abc',
          name: `erp${HOSTILE}`,
          url: 'https://erp.example/hook?x=<b>',
          events: ['sales-order.*'],
          state: 'disabled',
          disabledBy: 'operator',
          failingSince: '2026-03-02T14:00:00.000Z',
          delivered: 1,
          failed: 2,
          lastAttempts: [],
        },
      ],
    });
    const text = await page.text();
    expect(text).not.toContain('<script>alert');
    expect(text).toContain('https://erp.example/hook?x=&lt;b&gt;');
    expect(text).toContain('<dt>Failing since</dt><dd>2026-03-02 14:00:00 UTC</dd>');
    expect(text).toContain('disabled</span> (by operator)');
    expect(text).toContain('action="/portal/webhooks/abc/test"');
    const none = await webhooksPage({ viewer, endpoints: [] }).text();
    expect(none).toContain('Your business has no webhook endpoints.');
    expect(none).not.toContain('Send test event</button>');
  });
});

describe('the pages without the history', () => {
  it('say what is missing: batches, events or records', () => {
    const missing = (what?: 'events' | 'records') => {
      try {
        historyOf({}, what);
      } catch (error) {
        return (error as Error).message;
      }
      return 'no error';
    };
    expect(missing()).toContain('so it has no batches to show');
    expect(missing('events')).toContain('so it has no events to show');
    expect(missing('records')).toContain('so it has no records to show');
  });
});
