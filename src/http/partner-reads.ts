import type { H3Event } from 'h3';
import { z } from 'zod';
import { InvalidQuery, NotFound } from '../errors.js';
import type { EventActions } from '../events/actions.js';
import type { HistoryStore } from '../history/store.js';
import type { Logger } from '../log.js';
import type { Bulkhead } from '../ingest/bulkhead.js';
import type { Admission } from './admission.js';

/**
 * What the partner API's reads share (batches, records, events): their dependencies, the history
 * they read, and the list query every list takes — filters, `limit`, and an opaque `cursor`.
 * Every read is scoped to the authenticated business, so another business's id answers 404
 * exactly as an unknown one does.
 */
export interface PartnerReadDependencies {
  readonly admission: Admission;
  readonly log: Logger;
  /** The history's reads; undefined when it is off (`history.enabled: false`, the sandbox). */
  readonly history?: HistoryStore;
  readonly responseHeaders: Record<string, string>;
}

export interface PartnerEventsDependencies extends PartnerReadDependencies {
  /** The events worker's actions; undefined without a broker (no events are delivered). */
  readonly events?: EventActions;
  /** The batches' bulkhead: an action holds one of its business's slots while it runs. */
  readonly bulkhead: Bulkhead;
}

export function actionsOf(deps: PartnerEventsDependencies): EventActions {
  if (deps.events) return deps.events;
  throw new NotFound({
    detail: 'This service delivers no events (it has no broker), so it has no webhooks to show.',
  });
}

export const PAGE_DEFAULT = 25;
export const PAGE_MAX = 100;

/**
 * The times both stores can compare with (PostgreSQL has no year 0, and a year past 9999 has no
 * ISO 8601 form it reads): a time or cursor outside them is a 400, not a store error (a 500).
 */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');
const inRange = (ms: number) => ms >= EARLIEST && ms <= LATEST;

/** A query parameter holding a time. */
export const queryTime = z.iso
  .datetime({ offset: true })
  .transform((text) => new Date(text))
  .refine((at) => inRange(at.getTime()), {
    message: 'Expected a time from 0001-01-01 to 9999-12-31 (UTC)',
  })
  .describe('an ISO 8601 date-time with a zone');

/**
 * Text no store can take as a parameter: NUL (PostgreSQL refuses it in any text) and a UTF-16
 * surrogate without its pair (the same rule as a record's text, records/tenancy.ts).
 */
const UNSAFE_TEXT = /[\0\p{Cs}]/u;
const UNSAFE_MESSAGE = 'Must not contain a NUL character (%00) or an unpaired UTF-16 surrogate';

/** A list's query: its filters, and the `limit` and `cursor` every list takes; nothing else. */
export function listQuery<Filters extends z.ZodRawShape>(filters: Filters) {
  return z.strictObject({
    ...filters,
    limit: z.coerce.number().int().min(1).max(PAGE_MAX).default(PAGE_DEFAULT),
    cursor: z.string().max(600).optional(),
  });
}

type Paged = { limit: number; cursor?: string | undefined };

/** Where a page ends: the time and id of its last item, newest first. */
export interface PageCursor {
  readonly at: Date;
  readonly id: string;
}

/** A cursor is the last item of a page, opaque to the client: `base64url(<at ms>.<id>)`. */
export function encodeCursor(cursor: PageCursor): string {
  return Buffer.from(`${cursor.at.getTime()}.${cursor.id}`).toString('base64url');
}

/** The cursor `encodeCursor` gave, or undefined for anything else (`validId` checks the id part). */
export function decodeCursor(
  text: string,
  validId: (id: string) => boolean,
): PageCursor | undefined {
  const decoded = Buffer.from(text, 'base64url').toString('utf8');
  const dot = decoded.indexOf('.');
  const ms = decoded.slice(0, dot);
  const id = decoded.slice(dot + 1);
  if (dot < 1 || !/^\d+$/.test(ms) || !validId(id)) return undefined;
  const at = new Date(Number(ms));
  return inRange(at.getTime()) ? { at, id } : undefined;
}

/**
 * A route's query parameters as `schema` reads them; bad input is an `InvalidQuery` naming each.
 * `params`: the parameters to read instead of the URL's (the portal drops a form's empty fields).
 */
export function readQuery<Query extends z.ZodType>(
  event: H3Event,
  query: Query,
  params: Record<string, string> = Object.fromEntries(new URL(event.req.url).searchParams),
): z.output<Query> {
  const unsafe = Object.entries(params).filter(([, value]) => UNSAFE_TEXT.test(value));
  if (unsafe.length > 0)
    throw new InvalidQuery({
      detail: 'A query parameter holds text no store can search for; `errors` names each.',
      errors: unsafe.map(([path]) => ({ path, message: UNSAFE_MESSAGE })),
    });
  const parsed = query.safeParse(params);
  if (parsed.success) return parsed.data;
  throw new InvalidQuery({
    detail: 'A query parameter is not one this route takes; `errors` names each.',
    errors: parsed.error.issues.map((issue) => ({
      path:
        issue.path.join('.') || (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : ''),
      message: issue.code === 'unrecognized_keys' ? 'Unknown parameter' : issue.message,
    })),
  });
}

/**
 * A list's query: its filters as `query` reads them (strict: an unknown parameter is named), its
 * page size, and where the page starts (`validId` checks the cursor's id part).
 */
export function readListQuery<Query extends z.ZodType<Paged>>(
  event: H3Event,
  query: Query,
  validId: (id: string) => boolean,
  params?: Record<string, string>,
): { filter: Omit<z.output<Query>, keyof Paged>; limit: number; after?: PageCursor } {
  const { cursor, limit, ...filter } = readQuery(event, query, params);
  const after = cursor === undefined ? undefined : decodeCursor(cursor, validId);
  if (cursor !== undefined && !after)
    throw new InvalidQuery({
      detail:
        'The cursor is not one this service gave: pass `next` from the previous page as it is.',
      errors: [{ path: 'cursor', message: 'Unknown cursor' }],
    });
  return { filter, limit, ...(after && { after }) };
}

/**
 * The router gives path segments as sent (percent-encoded); a malformed escape finds nothing.
 * A NUL (`%00`) is a 400 naming the parameter `name`: no store can search for it.
 */
export function decoded(segment: string, name = 'path'): string {
  let text: string;
  try {
    text = decodeURIComponent(segment);
  } catch {
    return segment;
  }
  if (UNSAFE_TEXT.test(text))
    throw new InvalidQuery({
      detail: 'A path parameter holds text no store can search for; `errors` names it.',
      errors: [{ path: name, message: UNSAFE_MESSAGE }],
    });
  return text;
}

/** The history, or `NotFound` saying it is off and what the reader therefore cannot see. */
export function historyOf(
  deps: { readonly history?: HistoryStore | undefined },
  what: 'batches' | 'events' | 'records' = 'batches',
): HistoryStore {
  if (deps.history) return deps.history;
  throw new NotFound({
    detail: `This service keeps no history (\`history.enabled\` is false), so it has no ${what} to show.`,
  });
}
