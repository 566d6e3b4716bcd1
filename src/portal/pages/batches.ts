import type { BatchEntry, BatchPage, BatchSource } from '../../history/store.js';
import { KIND_NAMES } from '../../records/kind.js';
import { HISTORY_BATCH_OUTCOMES } from '../../vocabulary.js';
import { html, type SafeHtml } from '../html.js';
import { page, pager, type Viewer, when } from './layout.js';

/** `/portal/batches`: the business's batches, newest first, a page at a time (the API's list and cursor). */

export interface BatchesView {
  readonly viewer: Viewer;
  readonly page: BatchPage;
  /** The filters as chosen (empty: any). */
  readonly outcome: string;
  readonly kind: string;
  /** The next page's cursor, as the API gives it. */
  readonly next?: string;
  /** The page size asked for in the address (`limit`, as the API takes it), kept from page to page. */
  readonly limit?: number;
  /** This page is not the first. */
  readonly paged: boolean;
}

export function sourceText(source: BatchSource): string {
  return 'endpoint' in source
    ? `HTTP ${source.endpoint}`
    : `File ${source.fileName} (pipeline ${source.pipeline})`;
}

export function outcomeBadge(outcome: string): SafeHtml {
  return html`<span class="outcome outcome-${outcome}">${outcome}</span>`;
}

function select(name: string, label: string, chosen: string, options: readonly string[]) {
  return html`<div><label for="${name}">${label}</label>
<select id="${name}" name="${name}"><option value="">Any</option>${options.map(
    (option) =>
      html`<option value="${option}"${option === chosen ? html` selected` : ''}>${option}</option>`,
  )}</select></div>`;
}

/** An operator reads several businesses' batches: each row says whose. */
function row(batch: BatchEntry, whose: boolean): SafeHtml {
  return html`<tr>
<td>${when(batch.at)}</td>
${whose && html`<td>${batch.businessId}</td>`}
<td><a class="id" href="/portal/batches/${encodeURIComponent(batch.correlationId)}">${batch.correlationId}</a></td>
<td>${sourceText(batch.source)}</td>
<td>${batch.kind}</td>
<td>${outcomeBadge(batch.outcome)}</td>
<td class="number">${batch.recordCount}</td>
</tr>`;
}

export function batchesPage(view: BatchesView): Response {
  const { items } = view.page;
  const whose = view.viewer.role === 'operator';
  return page({
    title: 'Batches',
    viewer: view.viewer,
    current: 'batches',
    body: html`<h1>Batches</h1>
<form class="filters" method="get" action="/portal/batches" role="search" aria-label="Filter batches">
${select('outcome', 'Outcome', view.outcome, HISTORY_BATCH_OUTCOMES)}
${select('kind', 'Kind', view.kind, KIND_NAMES)}
<div><button type="submit">Show</button></div>
</form>
${
  items.length === 0
    ? html`<p>No batches${view.outcome || view.kind ? ' match these filters' : ''} in the history.</p>`
    : html`<table>
<caption>Newest first${view.paged ? ', continued' : ''}</caption>
<thead><tr><th scope="col">Received</th>${whose && html`<th scope="col">Business</th>`}<th scope="col">Correlation id</th><th scope="col">Source</th><th scope="col">Kind</th><th scope="col">Outcome</th><th scope="col" class="number">Records</th></tr></thead>
<tbody>${items.map((batch) => row(batch, whose))}</tbody>
</table>`
}
${pager('/portal/batches', { outcome: view.outcome, kind: view.kind, limit: view.limit }, view, 'batches')}`,
  });
}
