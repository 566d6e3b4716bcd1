import type { BatchRecord } from '../../history/overview.js';
import type { BatchRow } from '../../history/store.js';
import { html, type SafeHtml } from '../html.js';
import { outcomeBadge, sourceText } from './batches.js';
import { page, type Viewer, when } from './layout.js';

/**
 * `/portal/batches/{correlationId}`: one batch — where it came from, how it ended, how many
 * records — and for a refusal every error as the problem details gave it, in the sender's own
 * terms: a CSV's line and column, a JSON record's number and field. An accepted batch lists its
 * records by their business keys, each linking to its record page.
 */

/** One error, split into where it is and what is wrong. */
export interface ErrorRow {
  /** 1-based record number in the batch, when the error is about one record. */
  readonly record?: number;
  readonly line?: number;
  /** A CSV column, or a JSON field path. */
  readonly where?: string;
  readonly message: string;
}

/** `line 3, column oOrderLines_Qty: …`, `line 5: …`, `identifiers.site: …`, or a message alone. */
function split(text: string, record?: number): ErrorRow {
  const at = record === undefined ? {} : { record };
  const cell = /^line (\d+), column ([^:]+): ([\s\S]*)$/.exec(text);
  if (cell) return { ...at, line: Number(cell[1]), where: cell[2]!, message: cell[3]! };
  const line = /^line (\d+): ([\s\S]*)$/.exec(text);
  if (line) return { ...at, line: Number(line[1]), message: line[2]! };
  const field = /^([^\s:]+): ([\s\S]*)$/.exec(text);
  if (field) return { ...at, where: field[1]!, message: field[2]! };
  return { ...at, message: text };
}

/** The problem details' `errors` (per record, or per field) as rows. */
export function errorRows(problem: unknown): ErrorRow[] {
  const errors = (problem as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors)) return [];
  return errors.flatMap((entry: unknown): ErrorRow[] => {
    if (typeof entry !== 'object' || entry === null) return [];
    const { index, errors: messages, path, message } = entry as Record<string, unknown>;
    if (typeof index === 'number' && Array.isArray(messages))
      return messages.map((text) => split(String(text), index + 1));
    if (typeof message === 'string')
      return [{ ...(typeof path === 'string' && path !== '' && { where: path }), message }];
    return [];
  });
}

function problemSection(problem: unknown): SafeHtml {
  const { title, detail } = (problem ?? {}) as { title?: unknown; detail?: unknown };
  const rows = errorRows(problem);
  return html`<section aria-labelledby="why">
<h2 id="why">Why it was refused</h2>
<div class="notice">
${typeof title === 'string' && html`<p><strong>${title}</strong></p>`}
${typeof detail === 'string' && html`<p>${detail}</p>`}
</div>
${
  rows.length > 0 &&
  html`<table>
<caption>Every error, as found in what you sent (${rows.length})</caption>
<thead><tr><th scope="col" class="number">Record</th><th scope="col" class="number">Line</th><th scope="col">Column or field</th><th scope="col">Error</th></tr></thead>
<tbody>${rows.map(
    (row) => html`<tr>
<td class="number">${row.record ?? ''}</td>
<td class="number">${row.line ?? ''}</td>
<td><code>${row.where ?? ''}</code></td>
<td>${row.message}</td>
</tr>`,
  )}</tbody>
</table>`
}
</section>`;
}

export function batchPage(
  viewer: Viewer,
  entries: readonly BatchRow[],
  records: readonly BatchRecord[],
): Response {
  const batch = entries.at(-1)!;
  const refused = batch.problem !== undefined;
  return page({
    title: `Batch ${batch.correlationId}`,
    viewer,
    current: 'batches',
    body: html`<p><a href="/portal/batches">← All batches</a></p>
<h1>Batch <span class="id">${batch.correlationId}</span></h1>
<dl class="facts">
${viewer.role === 'operator' && html`<dt>Business</dt><dd>${batch.businessId}</dd>`}
<dt>Received</dt><dd>${when(batch.at)}</dd>
<dt>Source</dt><dd>${sourceText(batch.source)}</dd>
<dt>Kind</dt><dd>${batch.kind}</dd>
<dt>Outcome</dt><dd>${outcomeBadge(batch.outcome)}</dd>
<dt>Records</dt><dd>${batch.recordCount}</dd>
${entries.length > 1 && html`<dt>Tries</dt><dd>${entries.length} (this is the latest)</dd>`}
</dl>
${refused && problemSection(batch.problem)}
${records.length > 0 && recordsSection(batch, records)}`,
  });
}

/** The records in batch order: business key (linking to its record page), line, message id. */
function recordsSection(batch: BatchRow, records: readonly BatchRecord[]): SafeHtml {
  const lookup = (reference: string) =>
    `/portal/records?${new URLSearchParams({ kind: batch.kind, key: reference })}`;
  return html`<section aria-labelledby="records">
<h2 id="records">Records</h2>
<table>
<caption>Each record by its business key, in batch order${
    batch.recordCount > records.length
      ? html` (the first ${records.length} of ${batch.recordCount})`
      : ''
  }; the message id is the one it was published with</caption>
<thead><tr><th scope="col" class="number">Record</th><th scope="col">Business key</th><th scope="col" class="number">Line</th><th scope="col">Message id</th></tr></thead>
<tbody>${records.map(
    (record) => html`<tr>
<td class="number">${record.index + 1}</td>
<td>${record.reference === '' ? html`<span class="muted">none</span>` : html`<a href="${lookup(record.reference)}">${record.reference}</a>`}</td>
<td class="number">${record.line ?? ''}</td>
<td><code>${record.messageId}</code></td>
</tr>`,
  )}</tbody>
</table>
</section>`;
}
