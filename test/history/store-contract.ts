import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookupRecord } from '../../src/http/partner-records.js';

import { createHistoryMetrics } from '../../src/history/metrics.js';
import { createHistoryWriter } from '../../src/history/writer.js';
import { createLogger } from '../../src/log.js';
import {
  RESPONSE_EXCERPT_CHARS,
  type BatchEntry,
  type HistoryStore,
  type HistoryWrites,
  type RecordEntries,
} from '../../src/history/store.js';

/** A history under test: stores opened on one fresh database (as several instances would). */
export interface HistoryFixture {
  /** A new store instance on the fixture's database, not opened yet. */
  store(): HistoryStore;
  cleanup(): Promise<void>;
}

const at = (iso: string) => new Date(iso);

function batch(overrides: Partial<BatchEntry> = {}): BatchEntry {
  return {
    id: randomUUID(),
    correlationId: randomUUID(),
    businessId: 'ACME',
    source: { endpoint: '/api/v2/sales-orders' },
    kind: 'sales-orders',
    recordCount: 2,
    outcome: 'accepted',
    at: at('2026-11-20T10:00:00.000Z'),
    ...overrides,
  };
}

/** A batch and its one record, as a source hands it to the writer. */
function oneRecord(b: BatchEntry, reference: string): HistoryWrites & { records: RecordEntries[] } {
  return {
    batches: [b],
    records: [
      {
        batchId: b.id,
        businessId: b.businessId,
        first: 0,
        references: [reference],
        messageIds: [randomUUID()],
        at: b.at,
      },
    ],
  };
}

/**
 * The behaviour every history store promises, run by each adapter's test file with its own
 * fixture (a SQLite file in a temporary folder; a database of its own on the real PostgreSQL).
 */
export function describeHistoryStore(name: string, makeFixture: () => Promise<HistoryFixture>) {
  describe(`HistoryStore contract: ${name}`, () => {
    let fixture: HistoryFixture;
    let store: HistoryStore;
    beforeAll(async () => {
      fixture = await makeFixture();
      // Migrations applied twice: by a first instance, closed, then by the one the tests use.
      const first = fixture.store();
      await first.open();
      await first.close();
      store = fixture.store();
      await store.open();
    });
    afterAll(async () => {
      await store?.close();
      await fixture?.cleanup();
    });

    it('opens again on a migrated database, and twice on the same instance', async () => {
      await store.open();
      expect(await store.endpointStates({ operator: true })).toEqual([]);
    });

    it('keeps an accepted batch with its records, read back by correlation id and business key', async () => {
      const accepted = batch();
      const ids = [randomUUID(), randomUUID()];
      await store.write({
        batches: [accepted],
        records: [
          {
            batchId: accepted.id,
            businessId: 'ACME',
            first: 0,
            references: ['SO-1', 'SO-2'],
            messageIds: ids,
            lines: [2, undefined],
            at: accepted.at,
          },
        ],
      });
      const [row] = await store.batches({ businessId: 'ACME' }, accepted.correlationId);
      expect(row).toEqual({ ...accepted, messageIds: ids });
      const records = await store.records({ businessId: 'ACME' }, 'SO-1');
      expect(records).toEqual([
        {
          businessId: 'ACME',
          reference: 'SO-1',
          messageId: ids[0],
          index: 0,
          line: 2,
          batch: accepted,
        },
      ]);
      expect((await store.records({ businessId: 'ACME' }, 'SO-2'))[0]).not.toHaveProperty('line');
    });

    it('keeps a refused batch with its problem details, and a dropped file with its receipt', async () => {
      const refused = batch({
        outcome: 'rejected',
        recordCount: 1,
        problem: { type: 'validation-failed', status: 400, errors: [{ index: 0 }] },
      });
      const dropped = batch({
        source: { pipeline: 'acme-orders', fileName: 'orders-1.csv' },
        outcome: 'accepted',
        receipt: { outcome: 'accepted', records: 2 },
      });
      await store.write({ batches: [refused, dropped] });
      expect(await store.batches({ businessId: 'ACME' }, refused.correlationId)).toEqual([
        { ...refused, messageIds: [] },
      ]);
      expect(await store.batches({ operator: true }, dropped.correlationId)).toEqual([
        { ...dropped, messageIds: [] },
      ]);
    });

    it('writes the same rows again without doubling them (a commit whose answer was lost)', async () => {
      const again = batch();
      const writes = {
        batches: [again],
        records: [
          {
            batchId: again.id,
            businessId: 'ACME',
            first: 0,
            references: ['SO-AGAIN'],
            messageIds: [randomUUID()],
            at: again.at,
          },
        ],
      };
      await store.write(writes);
      await store.write(writes);
      expect(await store.batches({ businessId: 'ACME' }, again.correlationId)).toHaveLength(1);
      expect(await store.records({ businessId: 'ACME' }, 'SO-AGAIN')).toHaveLength(1);
    });

    it("never answers a business's query with another business's rows; the operator sees both", async () => {
      const shared = randomUUID();
      const ours = batch({ correlationId: shared, businessId: 'ACME' });
      const theirs = batch({ correlationId: shared, businessId: 'GLOBEX' });
      const record = (b: BatchEntry) => ({
        batchId: b.id,
        businessId: b.businessId,
        first: 0,
        references: ['SHARED-NUMBER'],
        messageIds: [randomUUID()],
        at: b.at,
      });
      const eventId = `evt-${randomUUID()}`;
      await store.write({
        batches: [ours, theirs],
        records: [record(ours), record(theirs)],
        events: [
          {
            id: eventId,
            type: 'sales-order.shipped',
            businessId: 'GLOBEX',
            payload: { data: { shipmentId: 'S-1' } },
            receivedAt: at('2026-11-20T10:00:00Z'),
          },
        ],
        attempts: [
          {
            id: randomUUID(),
            eventId,
            businessId: 'GLOBEX',
            endpoint: 'globex-orders',
            at: at('2026-11-20T10:00:01Z'),
            end: 'delivered',
            status: 200,
            durationMs: 12,
          },
        ],
        endpointStates: [
          {
            businessId: 'GLOBEX',
            endpoint: 'globex-orders',
            enabled: true,
            circuit: 'closed',
            updatedAt: at('2026-11-20T10:00:01Z'),
          },
        ],
      });
      const acme = { businessId: 'ACME' };
      expect((await store.batches(acme, shared)).map((b) => b.businessId)).toEqual(['ACME']);
      expect((await store.records(acme, 'SHARED-NUMBER')).map((r) => r.businessId)).toEqual([
        'ACME',
      ]);
      expect(await store.event(acme, eventId)).toBeUndefined();
      expect(await store.attempts(acme, eventId)).toEqual([]);
      expect(await store.endpointStates(acme)).toEqual([]);
      const operator = { operator: true } as const;
      expect((await store.batches(operator, shared)).map((b) => b.businessId).sort()).toEqual([
        'ACME',
        'GLOBEX',
      ]);
      expect(await store.records(operator, 'SHARED-NUMBER')).toHaveLength(2);
      expect((await store.event({ businessId: 'GLOBEX' }, eventId))?.payload).toEqual({
        data: { shipmentId: 'S-1' },
      });
    });

    it('lists batches newest first, page by page, narrowed by each filter, one business at a time', async () => {
      const business = `PAGES-${randomUUID().slice(0, 8)}`;
      const other = `PAGES-${randomUUID().slice(0, 8)}`;
      const minute = (m: number) => at(`2026-11-21T10:${String(m).padStart(2, '0')}:00.000Z`);
      const ours = Array.from({ length: 7 }, (_, m) =>
        batch({
          businessId: business,
          at: minute(m),
          ...(m % 2 === 1 && { outcome: 'rejected', recordCount: 0 }),
          ...(m === 6 && {
            source: { pipeline: 'acme-sftp', fileName: 'orders.csv' },
            kind: 'purchase-orders',
          }),
        }),
      );
      // Two in the same instant: the id orders them, and neither is skipped at a page's edge.
      const twin = batch({ businessId: business, at: minute(3) });
      await store.write({
        batches: [...ours, twin, batch({ businessId: other, at: minute(5) })],
      });
      const scope = { businessId: business };
      const all: string[] = [];
      let after: Awaited<ReturnType<HistoryStore['listBatches']>>['next'];
      let pages = 0;
      do {
        const page = await store.listBatches(scope, {}, { limit: 3, ...(after && { after }) });
        all.push(...page.items.map((b) => b.correlationId));
        after = page.next;
        pages += 1;
      } while (after);
      expect(pages).toBe(3);
      expect(all).toHaveLength(8);
      expect(new Set(all).size).toBe(8);
      expect(all[0]).toBe(ours[6]!.correlationId);
      expect(all.at(-1)).toBe(ours[0]!.correlationId);

      const only = async (filter: Parameters<HistoryStore['listBatches']>[1]) =>
        (await store.listBatches(scope, filter, { limit: 50 })).items.map((b) => b.correlationId);
      expect(await only({ outcome: 'rejected' })).toEqual(
        [5, 3, 1].map((m) => ours[m]!.correlationId),
      );
      expect(await only({ since: minute(5) })).toEqual([6, 5].map((m) => ours[m]!.correlationId));
      expect(await only({ until: minute(1) })).toEqual([ours[0]!.correlationId]);
      expect(await only({ source: 'acme-sftp' })).toEqual([ours[6]!.correlationId]);
      expect(await only({ kind: 'purchase-orders' })).toEqual([ours[6]!.correlationId]);
      expect(
        await only({ source: '/api/v2/sales-orders', since: minute(4), until: minute(6) }),
      ).toEqual([ours[5]!.correlationId, ours[4]!.correlationId]);
      const operator = await store.listBatches(
        { operator: true },
        { since: minute(5), until: minute(6) },
        { limit: 50 },
      );
      expect(operator.items.map((b) => b.businessId)).toEqual(
        expect.arrayContaining([business, other]),
      );
    });

    it('finds the events that answer a record by its message id, within one business', async () => {
      const [ours, other, theirs] = [randomUUID(), randomUUID(), randomUUID()];
      const event = (id: string, businessId: string, messageIds: string[], minute: number) => ({
        id,
        type: minute === 1 ? 'sales-order.picked' : 'sales-order.shipped',
        businessId,
        payload: { orderNumber: 'SO-ABOUT' },
        receivedAt: at(`2026-11-22T10:0${minute}:00Z`),
        occurredAt: at(`2026-11-22T10:0${minute}:00Z`),
        messageIds,
      });
      await store.write({
        events: [
          event(`evt-${randomUUID()}`, 'ACME', [other, ours], 2),
          event(`evt-${randomUUID()}`, 'ACME', [ours], 1),
          event(`evt-${randomUUID()}`, 'ACME', [other], 3),
          event(`evt-${randomUUID()}`, 'GLOBEX', [theirs, ours], 4),
        ],
      });
      const found = await store.eventsAbout({ businessId: 'ACME' }, [ours]);
      expect(found.map((e) => e.type)).toEqual(['sales-order.picked', 'sales-order.shipped']);
      expect(found.every((e) => e.businessId === 'ACME')).toBe(true);
      expect(await store.eventsAbout({ businessId: 'ACME' }, [theirs])).toEqual([]);
      expect(await store.eventsAbout({ businessId: 'ACME' }, [])).toEqual([]);
      expect(await store.eventsAbout({ operator: true }, [ours])).toHaveLength(3);
    });

    it("gives a record the state of its latest event, found by its own number in the event's data, past 100 events", async () => {
      const business = `STATE-${randomUUID().slice(0, 8)}`;
      const accepted = batch({ businessId: business, at: at('2026-11-24T09:00:00.000Z') });
      await store.write({
        batches: [accepted],
        records: [
          {
            batchId: accepted.id,
            businessId: business,
            first: 0,
            references: ['SO-STATE'],
            messageIds: [randomUUID()],
            lines: [undefined],
            at: accepted.at,
          },
        ],
      });
      // 120 events naming no message id, only the order's number (as the warehouse may send
      // them); the last one is the newest. Another order's and another kind's never count.
      const time = (n: number) => new Date(Date.parse('2026-11-24T10:00:00.000Z') + n * 1000);
      const event = (n: number, type: string, payload: Record<string, unknown>) => ({
        id: `evt-state-${n}-${randomUUID()}`,
        type,
        businessId: business,
        payload,
        receivedAt: time(n),
        occurredAt: time(n),
      });
      await store.write({
        events: [
          ...Array.from({ length: 119 }, (_, n) =>
            event(n, 'sales-order.picked', { orderNumber: 'SO-STATE' }),
          ),
          event(119, 'sales-order.shipped', { orderNumber: 'SO-STATE' }),
          event(120, 'sales-order.cancelled', { orderNumber: 'SO-OTHER' }),
          event(121, 'purchase-order.received', { orderNumber: 'SO-STATE' }),
        ],
      });
      const found = await lookupRecord(store, { businessId: business }, 'sales-orders', 'SO-STATE');
      expect(found?.state).toBe('sales-order.shipped');
      expect(found?.events).toHaveLength(100);
      expect(found?.events.at(0)?.occurredAt).toEqual(time(20));
      expect(found?.events.at(-1)?.occurredAt).toEqual(time(119));
      expect(await lookupRecord(store, { businessId: 'ACME' }, 'sales-orders', 'SO-STATE')).toBe(
        undefined,
      );
    });

    it('pages events newest first with their attempts, filtered, within one business', async () => {
      const business = `EVPAGES-${randomUUID().slice(0, 8)}`;
      const minute = (m: number) => at(`2026-11-23T10:${String(m).padStart(2, '0')}:00.000Z`);
      const ids = Array.from({ length: 6 }, (_, m) => `evt-${m}-${randomUUID()}`);
      const event = (id: string, m: number, businessId = business) => ({
        id,
        type: m % 2 === 0 ? 'sales-order.shipped' : 'purchase-order.received',
        businessId,
        payload: { n: m },
        receivedAt: minute(m),
      });
      const attempt = (eventId: string, second: number, end: 'failed' | 'delivered') => ({
        id: randomUUID(),
        eventId,
        businessId: business,
        endpoint: 'erp',
        at: at(`2026-11-23T11:00:${String(second).padStart(2, '0')}Z`),
        end,
        durationMs: 12,
      });
      await store.write({
        // ids[4] and ids[5] in the same instant: the id orders them, neither skipped at a page's edge.
        events: [
          ...ids.map((id, m) => event(id, Math.min(m, 4))),
          event(`evt-other-${randomUUID()}`, 3, `${business}-OTHER`),
        ],
        attempts: [attempt(ids[2]!, 9, 'delivered'), attempt(ids[2]!, 1, 'failed')],
      });
      const scope = { businessId: business };
      const seen: string[] = [];
      let after: Awaited<ReturnType<HistoryStore['listEvents']>>['next'];
      do {
        const page = await store.listEvents(scope, {}, { limit: 4, ...(after && { after }) });
        seen.push(...page.items.map((e) => e.id));
        after = page.next;
      } while (after);
      expect(seen).toHaveLength(6);
      expect(new Set(seen)).toEqual(new Set(ids));
      expect(seen.slice(2)).toEqual([ids[3], ids[2], ids[1], ids[0]]);

      const { items } = await store.listEvents(
        scope,
        { type: 'sales-order.shipped' },
        { limit: 10 },
      );
      expect(items.map((e) => e.id).slice(-2)).toEqual([ids[2], ids[0]]);
      const withAttempts = items.find((e) => e.id === ids[2])!;
      expect(withAttempts.attempts.map((a) => a.end)).toEqual(['failed', 'delivered']);
      expect(items.find((e) => e.id === ids[0])!.attempts).toEqual([]);
      const window = await store.listEvents(
        scope,
        { since: minute(1), until: minute(3) },
        { limit: 10 },
      );
      expect(window.items.map((e) => e.id)).toEqual([ids[2], ids[1]]);
      expect(window.next).toBeUndefined();
      const operator = await store.listEvents(
        { operator: true },
        { since: minute(3), until: minute(4) },
        { limit: 10 },
      );
      expect(operator.items.map((e) => e.businessId).sort()).toEqual([
        business,
        `${business}-OTHER`,
      ]);
    });

    it('keeps every attempt of an event in order, its response excerpt capped', async () => {
      const eventId = `evt-${randomUUID()}`;
      const long = 'x'.repeat(RESPONSE_EXCERPT_CHARS * 3);
      await store.write({
        events: [
          {
            id: eventId,
            type: 'purchase-order.received',
            businessId: 'ACME',
            payload: {},
            receivedAt: at('2026-11-20T11:00:00Z'),
          },
        ],
        attempts: [
          {
            id: randomUUID(),
            eventId,
            businessId: 'ACME',
            endpoint: 'https://hooks.example.com/a',
            at: at('2026-11-20T11:00:01Z'),
            end: 'failed',
            status: 503,
            durationMs: 30.4,
            responseExcerpt: long,
          },
          {
            id: randomUUID(),
            eventId,
            businessId: 'ACME',
            endpoint: 'https://hooks.example.com/a',
            at: at('2026-11-20T11:00:31Z'),
            end: 'failed',
            durationMs: 5000,
            error: 'timed out',
          },
        ],
      });
      const attempts = await store.attempts({ businessId: 'ACME' }, eventId);
      expect(attempts.map((a) => [a.end, a.status, a.durationMs, a.error])).toEqual([
        ['failed', 503, 30, undefined],
        ['failed', undefined, 5000, 'timed out'],
      ]);
      expect(attempts[0]!.responseExcerpt).toHaveLength(RESPONSE_EXCERPT_CHARS);
    });

    it("keeps an event's occurrence time, correlation id and message ids (a resend's body)", async () => {
      const full = {
        id: `evt-${randomUUID()}`,
        type: 'sales-order.shipped',
        businessId: 'ACME',
        payload: { orderNumber: 'SO-9' },
        receivedAt: at('2026-11-20T10:00:02Z'),
        occurredAt: at('2026-11-20T10:00:00Z'),
        correlationId: 'batch-9',
        messageIds: ['m-1', 'm-2'],
      };
      const bare = {
        id: `evt-${randomUUID()}`,
        type: 'sales-order.shipped',
        businessId: 'ACME',
        payload: {},
        receivedAt: at('2026-11-20T10:00:03Z'),
      };
      await store.write({ events: [full, bare] });
      expect(await store.event({ businessId: 'ACME' }, full.id)).toEqual(full);
      expect(await store.event({ businessId: 'ACME' }, bare.id)).toEqual(bare);
    });

    it('finds the events whose attempts at an endpoint since a time all failed, oldest first, per scope', async () => {
      const business = `REC-${randomUUID().slice(0, 8)}`;
      const other = `${business}-OTHER`;
      const event = (name: string, occurred: string, businessId = business) => ({
        id: `${name}-${randomUUID()}`,
        type: 'sales-order.shipped',
        businessId,
        payload: { name },
        receivedAt: at('2026-11-21T12:00:00Z'),
        occurredAt: at(occurred),
      });
      const attempt = (
        e: { id: string; businessId: string },
        time: string,
        end: 'delivered' | 'failed' | 'gone',
        endpoint = 'main',
      ) => ({
        id: randomUUID(),
        eventId: e.id,
        businessId: e.businessId,
        endpoint,
        at: at(time),
        end,
        durationMs: 5,
      });
      const failedLate = event('failed-late', '2026-11-21T10:30:00Z');
      const failedEarly = event('failed-early', '2026-11-21T10:10:00Z');
      const recovered = event('recovered', '2026-11-21T10:05:00Z');
      const before = event('before', '2026-11-21T09:00:00Z');
      const elsewhere = event('elsewhere', '2026-11-21T10:00:00Z');
      const byUrl = event('by-url', '2026-11-21T10:20:00Z');
      const theirs = event('theirs', '2026-11-21T10:00:00Z', other);
      const deliveredBefore = event('delivered-before', '2026-11-21T08:00:00Z');
      await store.write({
        events: [
          failedLate,
          failedEarly,
          recovered,
          before,
          elsewhere,
          byUrl,
          theirs,
          deliveredBefore,
        ],
        attempts: [
          attempt(failedLate, '2026-11-21T10:30:01Z', 'failed'),
          attempt(failedLate, '2026-11-21T10:31:01Z', 'failed'),
          attempt(failedEarly, '2026-11-21T10:10:01Z', 'gone'),
          attempt(recovered, '2026-11-21T10:05:01Z', 'failed'),
          attempt(recovered, '2026-11-21T10:06:01Z', 'delivered'),
          attempt(before, '2026-11-21T09:00:01Z', 'failed'),
          attempt(elsewhere, '2026-11-21T10:00:01Z', 'failed', 'backup'),
          attempt(byUrl, '2026-11-21T10:20:01Z', 'failed', 'https://hooks.example.com/a'),
          attempt(theirs, '2026-11-21T10:00:01Z', 'failed'),
          // Delivered before the window, failed (a resend) within it: recovered again.
          attempt(deliveredBefore, '2026-11-21T08:00:01Z', 'delivered'),
          attempt(deliveredBefore, '2026-11-21T10:40:00Z', 'failed'),
        ],
      });
      const since = at('2026-11-21T10:00:00Z');
      const names = ['main', 'https://hooks.example.com/a'];
      const ids = (events: { id: string }[]) => events.map((e) => e.id);
      expect(ids(await store.undeliveredSince({ businessId: business }, names, since))).toEqual([
        deliveredBefore.id,
        failedEarly.id,
        byUrl.id,
        failedLate.id,
      ]);
      const [first] = await store.undeliveredSince({ businessId: business }, names, since);
      expect(first).toEqual(deliveredBefore);
      expect(
        ids(await store.undeliveredSince({ businessId: business }, ['backup'], since)),
      ).toEqual([elsewhere.id]);
      expect(ids(await store.undeliveredSince({ businessId: other }, names, since))).toEqual([
        theirs.id,
      ]);
      const operator = ids(await store.undeliveredSince({ operator: true }, ['main'], since));
      expect(operator).toContain(theirs.id);
      expect(operator).toContain(failedLate.id);
      expect(operator).not.toContain(byUrl.id);
      expect(
        await store.undeliveredSince({ businessId: business }, names, at('2026-11-22T00:00:00Z')),
      ).toEqual([]);
    });

    it("keeps an endpoint's newest state: an older one written later changes nothing", async () => {
      const state = {
        businessId: 'INITECH',
        endpoint: 'initech-hook',
        enabled: false,
        disabledBy: 'gone',
        failingSince: at('2026-11-20T09:00:00Z'),
        circuit: 'open',
        updatedAt: at('2026-11-20T12:00:00Z'),
      } as const;
      await store.write({ endpointStates: [state] });
      await store.write({
        endpointStates: [
          { ...state, enabled: true, circuit: 'closed', updatedAt: at('2026-11-20T11:00:00Z') },
        ],
      });
      expect(await store.endpointStates({ businessId: 'INITECH' })).toEqual([state]);
      const enabled = {
        businessId: 'INITECH',
        endpoint: 'initech-hook',
        enabled: true,
        circuit: 'closed',
        updatedAt: at('2026-11-20T13:00:00Z'),
      } as const;
      await store.write({ endpointStates: [enabled] });
      expect(await store.endpointStates({ businessId: 'INITECH' })).toEqual([enabled]);
    });

    it("counts each endpoint's attempts and keeps its last few, newest first, one business's alone", async () => {
      const eventId = `evt-${randomUUID()}`;
      const attempt = (
        businessId: string,
        endpoint: string,
        second: number,
        end: 'delivered' | 'failed' | 'gone',
      ) => ({
        id: randomUUID(),
        eventId,
        businessId,
        endpoint,
        at: at(`2026-11-20T14:00:${String(second).padStart(2, '0')}Z`),
        end,
        durationMs: 1,
      });
      await store.write({
        attempts: [
          attempt('ACTIVE-A', 'hook', 1, 'failed'),
          attempt('ACTIVE-A', 'hook', 2, 'failed'),
          attempt('ACTIVE-A', 'hook', 3, 'delivered'),
          attempt('ACTIVE-A', 'https://a.example/x', 4, 'gone'),
          attempt('ACTIVE-B', 'hook', 5, 'delivered'),
        ],
      });
      const ours = await store.endpointActivity({ businessId: 'ACTIVE-A' }, 2);
      expect(ours.map((e) => [e.endpoint, e.delivered, e.failed, e.lastAttempts.length])).toEqual([
        ['hook', 1, 2, 2],
        ['https://a.example/x', 0, 1, 1],
      ]);
      expect(ours[0]!.lastAttempts.map((a) => a.end)).toEqual(['delivered', 'failed']);
      expect(ours.every((e) => e.businessId === 'ACTIVE-A')).toBe(true);
      const all = await store.endpointActivity({ operator: true });
      expect(all.filter((e) => e.businessId.startsWith('ACTIVE-'))).toHaveLength(3);
    });

    it('prunes each table after its own cut-off', async () => {
      const old = batch({ businessId: 'PRUNE', at: at('2020-01-01T00:00:00Z') });
      const recent = batch({ businessId: 'PRUNE', at: at('2026-11-25T00:00:00Z') });
      const records = (b: BatchEntry) => ({
        batchId: b.id,
        businessId: 'PRUNE',
        first: 0,
        references: ['P-1'],
        messageIds: [randomUUID()],
        at: b.at,
      });
      await store.write({ batches: [old, recent], records: [records(old), records(recent)] });
      const cut = at('2026-01-01T00:00:00Z');
      const pruned = await store.prune({
        batches: cut,
        records: at('2000-01-01T00:00:00Z'),
        events: cut,
        attempts: cut,
      });
      expect(pruned.batches).toBeGreaterThanOrEqual(1);
      expect(pruned.records).toBe(0);
      expect(await store.batches({ businessId: 'PRUNE' }, old.correlationId)).toEqual([]);
      expect(await store.batches({ businessId: 'PRUNE' }, recent.correlationId)).toHaveLength(1);
    });

    it('prunes records with the same cut-off as their batches: the old ones go, the recent stay', async () => {
      const old = batch({ businessId: 'PRUNE-R', at: at('2020-01-01T00:00:00Z') });
      const recent = batch({ businessId: 'PRUNE-R', at: at('2026-11-25T00:00:00Z') });
      const records = (b: BatchEntry, reference: string) => ({
        batchId: b.id,
        businessId: 'PRUNE-R',
        first: 0,
        references: [reference, reference],
        messageIds: [randomUUID(), randomUUID()],
        at: b.at,
      });
      await store.write({
        batches: [old, recent],
        records: [records(old, 'PR-OLD'), records(recent, 'PR-NEW')],
      });
      const cut = at('2026-01-01T00:00:00Z');
      const pruned = await store.prune({ batches: cut, records: cut, events: cut, attempts: cut });
      expect(pruned.records).toBeGreaterThanOrEqual(2);
      expect(await store.records({ businessId: 'PRUNE-R' }, 'PR-OLD')).toEqual([]);
      expect(await store.records({ businessId: 'PRUNE-R' }, 'PR-NEW')).toHaveLength(2);
      expect(await store.batches({ businessId: 'PRUNE-R' }, recent.correlationId)).toEqual([
        expect.objectContaining({ messageIds: expect.any(Array) }),
      ]);
    });

    it('prunes more rows than one delete takes, chunk after chunk', async () => {
      const old = at('2025-06-01T00:00:00.000Z');
      const many = Array.from({ length: 5_500 }, () =>
        batch({ businessId: 'PRUNE-MANY', recordCount: 1, at: old }),
      );
      const big = batch({ businessId: 'PRUNE-MANY', recordCount: 11_000, at: old });
      await store.write({
        batches: [...many, big],
        records: [
          ...many.map((b, i) => oneRecord(b, `PM-${i}`).records[0]!),
          {
            batchId: big.id,
            businessId: 'PRUNE-MANY',
            first: 0,
            references: Array.from({ length: 11_000 }, (_, i) => `PM-BIG-${i}`),
            messageIds: Array.from({ length: 11_000 }, () => randomUUID()),
            at: old,
          },
        ],
      });
      const cut = at('2025-07-01T00:00:00Z');
      const pruned = await store.prune({ batches: cut, records: cut, events: cut, attempts: cut });
      expect(pruned.batches).toBeGreaterThanOrEqual(5_501);
      expect(pruned.records).toBeGreaterThanOrEqual(16_500);
      expect(await store.records({ businessId: 'PRUNE-MANY' }, 'PM-5499')).toEqual([]);
      expect(await store.records({ businessId: 'PRUNE-MANY' }, 'PM-BIG-10999')).toEqual([]);
      const left = await store.listBatches({ businessId: 'PRUNE-MANY' }, {}, { limit: 1 });
      expect(left.items).toEqual([]);
    });

    it('writes all of a write or none of it: a row the store refuses takes the rest with it', async () => {
      const kept = batch();
      // A record without a batch (a bug): the store refuses it, and the batch beside it too.
      const refused = (entries: HistoryWrites) => expect(store.write(entries)).rejects.toThrow();
      const bad = {
        batchId: null as unknown as string,
        first: 0,
        businessId: 'ACME',
        references: ['SO-ALL-OR-NONE'],
        messageIds: [randomUUID()],
        at: kept.at,
      };
      await refused({ batches: [kept], records: [bad] });
      // The same with an endpoint state beside it (written in a transaction instead of one statement).
      await refused({
        batches: [kept],
        records: [bad],
        endpointStates: [
          {
            businessId: 'ACME',
            endpoint: 'all-or-none',
            enabled: true,
            circuit: 'closed',
            updatedAt: kept.at,
          },
        ],
      });
      expect(await store.batches({ businessId: 'ACME' }, kept.correlationId)).toEqual([]);
      const states = await store.endpointStates({ businessId: 'ACME' });
      expect(states.map((s) => s.endpoint)).not.toContain('all-or-none');
    });

    it('keeps text no store can keep (NUL, a lone surrogate) from outside the records as U+FFFD: the row is kept', async () => {
      const odd = batch({
        businessId: 'ODD-TEXT',
        source: { pipeline: 'odd', fileName: 'orders\u0000.csv' },
        outcome: 'rejected',
        problem: { errors: ['extra.key\u0000: no', 'lone \ud800'], 'key\u0000': 1 },
      });
      const eventId = `evt-${randomUUID()}\u0000`;
      await store.write({
        batches: [odd],
        records: [
          {
            batchId: odd.id,
            businessId: 'ODD-TEXT',
            first: 0,
            references: ['SO-\u00001'],
            messageIds: [randomUUID()],
            at: odd.at,
          },
        ],
        events: [
          {
            id: eventId,
            type: 'order.shipped',
            businessId: 'ODD-TEXT',
            payload: { note: 'a\u0000b', 'k\udc00': 'pair \ud83d\ude00 kept' },
            receivedAt: odd.at,
          },
        ],
        attempts: [
          {
            id: randomUUID(),
            eventId,
            businessId: 'ODD-TEXT',
            endpoint: 'https://partner.example/hook',
            at: odd.at,
            end: 'failed',
            status: 500,
            durationMs: 3,
            responseExcerpt: 'binary\u0000body',
            error: 'bad \udfff',
          },
        ],
      });
      const [row] = await store.batches({ businessId: 'ODD-TEXT' }, odd.correlationId);
      expect(row?.source).toEqual({ pipeline: 'odd', fileName: 'orders\ufffd.csv' });
      expect(row?.problem).toEqual({
        errors: ['extra.key\ufffd: no', 'lone \ufffd'],
        'key\ufffd': 1,
      });
      expect(await store.records({ businessId: 'ODD-TEXT' }, 'SO-\ufffd1')).toHaveLength(1);
      const kept = eventId.replace('\u0000', '\ufffd');
      expect((await store.event({ businessId: 'ODD-TEXT' }, kept))?.payload).toEqual({
        note: 'a\ufffdb',
        'k\ufffd': 'pair \ud83d\ude00 kept',
      });
      const [attempt] = await store.attempts({ businessId: 'ODD-TEXT' }, kept);
      expect(attempt).toMatchObject({ responseExcerpt: 'binary\ufffdbody', error: 'bad \ufffd' });
    });

    it('the writer isolates a row the store refuses: 50 other-business batches written with it are all found', async () => {
      const registry = new Registry();
      const metrics = createHistoryMetrics(registry);
      const lines: Array<Record<string, unknown>> = [];
      const writer = createHistoryWriter({
        store,
        log: createLogger({
          destination: { write: (l: string) => void lines.push(JSON.parse(l)) },
        }),
        metrics,
        maxPendingRows: 10_000,
        // Long enough that everything below is one merged flush, as under load.
        flushMs: 60_000,
      });
      metrics.watch(writer);
      const business = `NEIGHBOUR-${randomUUID().slice(0, 8)}`;
      const bad = batch({ businessId: 'BAD-ROW' });
      const theirs = Array.from({ length: 50 }, () =>
        batch({ businessId: business, recordCount: 1 }),
      );
      for (const [i, b] of theirs.slice(0, 25).entries()) writer.add(oneRecord(b, `N-${i}`));
      // A record the store refuses (no message id: a bug; or text it cannot keep), in the middle.
      writer.add({
        batches: [bad],
        records: [
          { ...oneRecord(bad, 'BAD-1').records[0]!, messageIds: [null as unknown as string] },
        ],
      });
      for (const [i, b] of theirs.slice(25).entries()) writer.add(oneRecord(b, `N-${25 + i}`));
      await writer.flush();
      for (const b of theirs)
        expect(await store.batches({ businessId: business }, b.correlationId)).toHaveLength(1);
      expect(await store.records({ businessId: business }, 'N-49')).toHaveLength(1);
      // The bad record's batch row was good: it is kept too.
      expect(await store.batches({ businessId: 'BAD-ROW' }, bad.correlationId)).toHaveLength(1);
      const value = async (name: string) =>
        (await registry.getSingleMetric(name)?.get())?.values[0]?.value;
      expect(await value('warehouse_ingest_history_refused_rows_total')).toBe(1);
      expect(await value('warehouse_ingest_history_dropped_rows_total')).toBe(0);
      expect(writer.pendingRows).toBe(0);
      expect(writer.reachable).toBe(true);
      const refused = lines.filter((l) => String(l.msg).startsWith('history row refused'));
      expect(refused).toEqual([
        expect.objectContaining({
          table: 'records',
          businessId: 'BAD-ROW',
          correlationId: bad.correlationId,
          rows: 1,
        }),
      ]);
      expect(JSON.stringify(refused)).not.toContain('BAD-1');
      await writer.close();
    });

    it('writes a file of many records in one call', async () => {
      const big = batch({ recordCount: 12_000 });
      const n = 12_000;
      await store.write({
        batches: [big],
        records: [
          {
            batchId: big.id,
            businessId: 'ACME',
            first: 0,
            references: Array.from({ length: n }, (_, i) => `BIG-${i}`),
            messageIds: Array.from({ length: n }, () => randomUUID()),
            lines: Array.from({ length: n }, (_, i) => i + 2),
            at: big.at,
          },
        ],
      });
      const [row] = await store.batches({ businessId: 'ACME' }, big.correlationId);
      expect(row!.messageIds).toHaveLength(n);
      expect((await store.records({ businessId: 'ACME' }, 'BIG-11999'))[0]!.line).toBe(12_001);
    });
  });
}
