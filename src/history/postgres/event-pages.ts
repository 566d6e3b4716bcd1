/**
 * Events page by page, newest first by receipt, each with its delivery attempts: for the partner
 * API and the portal. Keyset pagination on (`received_at`, `id`), as batch-pages.ts does for
 * batches; a page's attempts are read in one statement for all of its events.
 */
import {
  ATTEMPTS_PER_EVENT,
  type EventCursor,
  type EventFilter,
  type EventPage,
  type Scope,
} from '../store.js';
import type { SqlQuery } from './client.js';
import {
  type AttemptDbRow,
  type EventDbRow,
  eventPage,
  scoped,
  toAttempt,
  toEvent,
} from '../rows.js';

export async function listEvents(
  db: SqlQuery,
  scope: Scope,
  filter: EventFilter,
  page: { readonly limit: number; readonly after?: EventCursor },
): Promise<EventPage> {
  const rows = await db.query<EventDbRow>(
    `select * from history_events e
     where ($1::text is null or e.business_id = $1)
       and ($2::text is null or e.type = $2)
       and ($3::timestamptz is null or e.received_at >= $3)
       and ($4::timestamptz is null or e.received_at < $4)
       and ($5::timestamptz is null or (e.received_at, e.id) < ($5, $6::text))
     order by e.received_at desc, e.id desc
     limit $7`,
    [
      scoped(scope),
      filter.type ?? null,
      filter.since?.toISOString() ?? null,
      filter.until?.toISOString() ?? null,
      page.after?.at.toISOString() ?? null,
      page.after?.id ?? null,
      page.limit + 1,
    ],
  );
  const events = rows.map(toEvent);
  const attempts =
    events.length === 0
      ? []
      : await db.query<AttemptDbRow>(
          `select * from (select a.*, row_number() over (partition by event_id order by at, id) as n
             from history_attempts a
             where a.event_id = any($2::text[]) and ($1::text is null or a.business_id = $1)) ranked
           where n <= $3 order by event_id, at, id`,
          [scoped(scope), events.slice(0, page.limit).map((event) => event.id), ATTEMPTS_PER_EVENT],
        );
  return eventPage(events, page.limit, attempts.map(toAttempt));
}
