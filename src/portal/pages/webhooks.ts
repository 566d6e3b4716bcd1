import type { WebhookView } from '../../http/partner-webhooks.js';
import { html, type SafeHtml } from '../html.js';
import { outcomeBadge } from './batches.js';
import { ATTEMPT_HEADINGS, attemptRow } from './events.js';
import { type Notice, noticeBox, page, type Viewer, when } from './layout.js';

/**
 * `/portal/webhooks`: the business's endpoints as `GET /api/v2/webhooks` lists them — URL,
 * filters, state, counts, last attempts, never a secret — each with a "Send test event" button:
 * what a connector developer uses to check the receiving end without asking the operator.
 */

export interface WebhooksView {
  readonly viewer: Viewer;
  readonly endpoints: readonly WebhookView[];
  /** How the last test event went. */
  readonly notice?: Notice;
}

function endpointItem(viewer: Viewer, endpoint: WebhookView, n: number): SafeHtml {
  const attempts = endpoint.lastAttempts ?? [];
  return html`<article class="item" aria-labelledby="endpoint-${n}">
<h2 id="endpoint-${n}">${endpoint.name}</h2>
<dl class="facts">
<dt>URL</dt><dd><code>${endpoint.url}</code></dd>
<dt>Events</dt><dd>${endpoint.events.map((pattern, i) => html`${i > 0 && ', '}<code>${pattern}</code>`)}</dd>
<dt>State</dt><dd>${outcomeBadge(endpoint.state)}${endpoint.disabledBy && ` (by ${endpoint.disabledBy})`}</dd>
${endpoint.failingSince && html`<dt>Failing since</dt><dd>${when(new Date(endpoint.failingSince))}</dd>`}
<dt>Delivered</dt><dd>${endpoint.delivered ?? 0}</dd>
<dt>Failed</dt><dd>${endpoint.failed ?? 0}</dd>
</dl>
${
  attempts.length === 0
    ? html`<p>No attempts kept for this endpoint.</p>`
    : html`<table>
<caption>Last attempts, newest first</caption>
<thead><tr><th scope="col">Attempted</th><th scope="col">Event</th>${ATTEMPT_HEADINGS}</tr></thead>
<tbody>${attempts.map((attempt) => attemptRow(attempt, html`<td class="id">${attempt.eventId}</td>`))}</tbody>
</table>`
}
<form method="post" action="/portal/webhooks/${encodeURIComponent(endpoint.id)}/test">
<input type="hidden" name="csrf" value="${viewer.csrf}">
<button type="submit">Send test event</button>
</form>
</article>`;
}

export function webhooksPage(view: WebhooksView): Response {
  return page({
    title: 'Endpoints',
    viewer: view.viewer,
    current: 'webhooks',
    body: html`<h1>Endpoints</h1>
${noticeBox(view.notice)}
<p>Where the warehouse's events about your business are sent, signed (Standard Webhooks). <strong>Send test event</strong> sends a signed <code>webhook.test</code> event to the endpoint now and shows how it went.</p>
${
  view.endpoints.length === 0
    ? html`<p>Your business has no webhook endpoints. Ask your contact at the warehouse to add one.</p>`
    : view.endpoints.map((endpoint, n) => endpointItem(view.viewer, endpoint, n))
}`,
  });
}

/** The pages' answer when this service runs no events worker (no broker). */
/** An operator viewing all businesses, on a page of one business's endpoints. */
export function chooseBusinessPage(viewer: Viewer): Response {
  return page({
    title: 'Endpoints',
    viewer,
    current: 'webhooks',
    body: html`<h1>Endpoints</h1>
<p>Endpoints belong to one business: choose it with <strong>Business</strong> at the top of the page.</p>`,
  });
}

export function noEventsPage(viewer: Viewer, current: 'events' | 'webhooks'): Response {
  return page({
    title: current === 'events' ? 'Events' : 'Endpoints',
    viewer,
    current,
    body: html`<h1>${current === 'events' ? 'Events' : 'Endpoints'}</h1>
<p>Events are not delivered by this service: it runs without a message broker, so it sends no webhooks and has no endpoints to show.</p>`,
  });
}
