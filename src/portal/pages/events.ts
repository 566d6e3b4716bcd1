import { webhookTest } from '../../events/catalog/index.js';
import type { EndpointDeliveries } from '../../history/overview.js';
import type { EventPage, EventWithAttempts } from '../../history/store.js';
import { attemptView } from '../../http/partner-events.js';
import { html, type SafeHtml } from '../html.js';
import { outcomeBadge } from './batches.js';
import { type Notice, noticeBox, page, pager, type Viewer, when } from './layout.js';
import { deliveriesTable } from './overview.js';

/**
 * `/portal/events`: the warehouse's events about the business, newest first as the service
 * received them (the API's list and cursor), each with its delivery attempts — "did you send it,
 * what did my endpoint answer?" — and a Resend button; before the list, each endpoint's last day
 * (the overview's table).
 */

export interface EventsView {
  readonly viewer: Viewer;
  readonly page: EventPage;
  /** Each endpoint's last 24 hours, summarised before the list. */
  readonly endpoints: readonly EndpointDeliveries[];
  /** The event types the filter offers (the catalog's). */
  readonly types: readonly string[];
  /** The type chosen (empty: any). */
  readonly type: string;
  readonly next?: string;
  readonly limit?: number;
  readonly paged: boolean;
  /** What the last Resend did. */
  readonly notice?: Notice;
}

/** An attempt as the API shows it; the portal shows the same fields. */
export type AttemptView = ReturnType<typeof attemptView>;

/** Characters of an answer or an error shown in a table cell; the API gives up to 1,024. */
const EXCERPT_CHARS = 200;

function excerpt(attempt: AttemptView): string {
  const text = attempt.error ?? attempt.responseExcerpt ?? '';
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

/** One attempt as a table row; `first` is the leading cell (the event's id on the endpoints page). */
export function attemptRow(attempt: AttemptView, first?: SafeHtml): SafeHtml {
  return html`<tr>
<td>${when(new Date(attempt.at))}</td>
${first ?? html`<td>${attempt.endpoint}</td>`}
<td>${outcomeBadge(attempt.end)}</td>
<td class="number">${attempt.status ?? ''}</td>
<td class="number">${attempt.durationMs} ms</td>
<td class="excerpt"><code>${excerpt(attempt)}</code></td>
</tr>`;
}

export const ATTEMPT_HEADINGS = html`<th scope="col">Ended</th><th scope="col" class="number">Status</th><th scope="col" class="number">Took</th><th scope="col">Answer or error</th>`;

function eventItem(
  viewer: Viewer,
  event: EventWithAttempts,
  n: number,
  resend = true,
  heading: 'h1' | 'h2' = 'h2',
): SafeHtml {
  const attempts = event.attempts.map(attemptView);
  return html`<article class="item" aria-labelledby="event-${n}">
${heading === 'h1' ? html`<h1 id="event-${n}">Event ${event.type} <span class="id">${event.id}</span></h1>` : html`<h2 id="event-${n}"><a href="/portal/events/${encodeURIComponent(event.id)}">${event.type}</a> <span class="id">${event.id}</span></h2>`}
<dl class="facts">
${viewer.role === 'operator' && html`<dt>Business</dt><dd>${event.businessId}</dd>`}
${event.occurredAt && html`<dt>Occurred</dt><dd>${when(event.occurredAt)}</dd>`}
<dt>Received</dt><dd>${when(event.receivedAt)}</dd>
${
  event.correlationId !== undefined &&
  html`<dt>Batch</dt><dd><a class="id" href="/portal/batches/${encodeURIComponent(event.correlationId)}">${event.correlationId}</a></dd>`
}
</dl>
${
  attempts.length === 0
    ? html`<p>No delivery attempts yet.</p>`
    : html`<table>
<caption>Delivery attempts, oldest first (${attempts.length})</caption>
<thead><tr><th scope="col">Attempted</th><th scope="col">Endpoint</th>${ATTEMPT_HEADINGS}</tr></thead>
<tbody>${attempts.map((attempt) => attemptRow(attempt))}</tbody>
</table>`
}
${
  // A test is sent anew from the endpoints page, never resent (actions.ts refuses it).
  resend &&
  event.type !== webhookTest.type &&
  html`<form method="post" action="/portal/events/${encodeURIComponent(event.id)}/resend">
<input type="hidden" name="csrf" value="${viewer.csrf}">
<button type="submit">Resend</button>
</form>`
}
</article>`;
}

export function eventsPage(view: EventsView): Response {
  const { items } = view.page;
  return page({
    title: 'Events',
    viewer: view.viewer,
    current: 'events',
    body: html`<h1>Events</h1>
${noticeBox(view.notice)}
<p>What the warehouse told your endpoints, newest first, with every delivery attempt. <strong>Resend</strong> sends an event again, with its original id, to each of your endpoints that takes its type now.</p>
<section aria-labelledby="per-endpoint">
<h2 id="per-endpoint">Per endpoint, last 24 hours</h2>
${deliveriesTable(view.viewer, view.endpoints)}
</section>
<form class="filters" method="get" action="/portal/events" role="search" aria-label="Filter events">
<div><label for="type">Event type</label>
<select id="type" name="type"><option value="">Any</option>${view.types.map(
      (type) =>
        html`<option value="${type}"${type === view.type ? html` selected` : ''}>${type}</option>`,
    )}</select></div>
<div><button type="submit">Show</button></div>
</form>
${
  items.length === 0
    ? html`<p>No events${view.type ? ' of this type' : ''} in the history.</p>`
    : items.map((event, n) => eventItem(view.viewer, event, n))
}
${pager('/portal/events', { type: view.type, limit: view.limit }, view, 'events')}`,
  });
}

/**
 * `/portal/events/{id}`: one event and every attempt to deliver it, where the overview's failed
 * deliveries link; Resend only where this service delivers events.
 */
export function eventPage(viewer: Viewer, event: EventWithAttempts, resend: boolean): Response {
  return page({
    title: `Event ${event.id}`,
    viewer,
    current: 'events',
    body: html`<p><a href="/portal/events">← All events</a></p>
${eventItem(viewer, event, 0, resend, 'h1')}`,
  });
}
