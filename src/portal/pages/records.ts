import type { RecordLookup } from '../../http/partner-records.js';
import { KIND_NAMES } from '../../records/kind.js';
import { html, type SafeHtml } from '../html.js';
import { sourceText } from './batches.js';
import { page, type Viewer, when } from './layout.js';

/** `/portal/records?kind=&key=`: one record by its own number — its state, batches and events. */

export interface RecordsView {
  readonly viewer: Viewer;
  readonly kind: string;
  readonly key: string;
  /** Undefined before a look-up, or when nothing was found (`searched`). */
  readonly found?: RecordLookup;
  readonly searched: boolean;
}

function lookupForm(kind: string, key: string): SafeHtml {
  return html`<form class="filters lookup" method="get" action="/portal/records" role="search" aria-label="Find a record">
<div><label for="kind">Kind</label>
<select id="kind" name="kind">${KIND_NAMES.map(
    (name) => html`<option value="${name}"${name === kind ? html` selected` : ''}>${name}</option>`,
  )}</select></div>
<div><label for="key">Record number</label>
<input type="text" id="key" name="key" value="${key}" required maxlength="200" autocomplete="off"></div>
<div><button type="submit">Find</button></div>
</form>`;
}

function result(view: RecordsView, found: RecordLookup): SafeHtml {
  return html`<h2>${view.kind} <span class="id">${view.key}</span></h2>
<dl class="facts"><dt>State</dt><dd>${found.state}</dd></dl>
<table>
<caption>Batches that carried it, newest first</caption>
<thead><tr><th scope="col">Received</th><th scope="col">Batch</th><th scope="col">Source</th><th scope="col">Message id</th><th scope="col" class="number">Line</th></tr></thead>
<tbody>${found.carriers.map(
    (row) => html`<tr>
<td>${when(row.batch.at)}</td>
<td><a class="id" href="/portal/batches/${encodeURIComponent(row.batch.correlationId)}">${row.batch.correlationId}</a></td>
<td>${sourceText(row.batch.source)}</td>
<td class="id">${row.messageId}</td>
<td class="number">${row.line ?? ''}</td>
</tr>`,
  )}</tbody>
</table>
${
  found.events.length === 0
    ? html`<p>No events from the warehouse about it yet.</p>`
    : html`<table>
<caption>Events from the warehouse, oldest first</caption>
<thead><tr><th scope="col">Event</th><th scope="col">Occurred</th><th scope="col">Received</th></tr></thead>
<tbody>${found.events.map(
        (event) =>
          html`<tr><td>${event.type}</td><td>${event.occurredAt ? when(event.occurredAt) : ''}</td><td>${when(event.receivedAt)}</td></tr>`,
      )}</tbody>
</table>`
}`;
}

export function recordsPage(view: RecordsView): Response {
  const missing = view.searched && !view.found;
  return page({
    title: 'Records',
    viewer: view.viewer,
    current: 'records',
    status: missing ? 404 : 200,
    body: html`<h1>Records</h1>
<p>Find one of your records by its own number (a sales order's shipment id, a product's id…).</p>
${lookupForm(view.kind, view.key)}
${view.found && result(view, view.found)}
${
  missing &&
  html`<p role="status">No ${view.kind} record numbered <strong>${view.key}</strong> was accepted within the history's retention. A record only ever refused is not kept: look for its batch among the batches.</p>`
}`,
  });
}
