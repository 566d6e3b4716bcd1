import { INPUT_STATUSES } from '../../vocabulary.js';
import { html, type SafeHtml } from '../html.js';
import type { DropView, FailingInput, ReprocessAnswer } from '../operator-actions.js';
import { type Notice, noticeBox, page, type Viewer } from './layout.js';
import { outcomeBadge } from './batches.js';

/**
 * `/portal/operator/drops`: each pipeline's drop as `status` reports it — its inputs by state and
 * the latest that failed, with their attempts, next retry and last error — and a Reprocess button
 * on each that a reprocess takes (failed, retry scheduled). A dead input used up
 * `retry.maxAttempts` and is never reprocessed: it says so instead.
 */
export interface DropsView {
  readonly viewer: Viewer;
  readonly drops: readonly DropView[];
  readonly notice?: Notice;
}

const REPROCESSABLE: ReadonlySet<string> = new Set(['failed', 'retry-scheduled']);

function inputRow(viewer: Viewer, pipeline: string, input: FailingInput): SafeHtml {
  return html`<tr>
<td><code>${input.location ?? input.file}</code></td>
<td>${outcomeBadge(input.status)}</td>
<td class="number">${input.attempts}</td>
<td>${input.status === 'retry-scheduled' ? (input.nextAttemptAt ?? '') : ''}</td>
<td class="excerpt"><code>${(input.lastError ?? '').slice(0, 300)}</code></td>
<td>${
    REPROCESSABLE.has(input.status)
      ? html`<form method="post" action="/portal/operator/drops/${encodeURIComponent(pipeline)}/${input.sha256}/reprocess">
<input type="hidden" name="csrf" value="${viewer.csrf}">
<button type="submit" aria-label="Reprocess ${input.file}">Reprocess</button>
</form>`
      : 'Never reprocessed (attempts used up)'
  }</td>
</tr>`;
}

function dropItem(viewer: Viewer, drop: DropView, n: number): SafeHtml {
  return html`<article class="item" aria-labelledby="drop-${n}">
<h2 id="drop-${n}">${drop.pipeline}</h2>
<p><code>${drop.source}</code></p>
${
  drop.error
    ? html`<p class="notice">The drop could not be read: ${drop.error}</p>`
    : html`<table>
<caption>Inputs by state (${drop.inputs})</caption>
<thead><tr>${INPUT_STATUSES.map((status) => html`<th scope="col" class="number">${status}</th>`)}</tr></thead>
<tbody><tr>${INPUT_STATUSES.map((status) => html`<td class="number">${drop.byStatus[status]}</td>`)}</tr></tbody>
</table>
${
  drop.lastFailures.length === 0
    ? html`<p>No input of this drop has failed.</p>`
    : html`<table>
<caption>Inputs whose last try failed, newest first (${drop.lastFailures.length})</caption>
<thead><tr><th scope="col">Input</th><th scope="col">State</th><th scope="col" class="number">Attempts</th><th scope="col">Next retry</th><th scope="col">Last error</th><th scope="col">Action</th></tr></thead>
<tbody>${drop.lastFailures.map((input) => inputRow(viewer, drop.pipeline, input))}</tbody>
</table>`
}`
}
</article>`;
}

/** What one Reprocess did, as the page says it once. */
export function reprocessNotice(pipeline: string, answer: ReprocessAnswer | undefined): Notice {
  if (!answer)
    return {
      tone: 'failed',
      text: 'Nothing was reprocessed: the input is not one a reprocess takes now.',
    };
  if (answer.standby)
    return {
      tone: 'failed',
      text: `Nothing was reprocessed: another worker holds the lease of ${pipeline}'s drop.`,
    };
  const { outcome } = answer;
  const settled = outcome === 'accepted' || outcome === 'validated' || outcome === 'duplicate';
  const attempt = answer.attempt === undefined ? '' : ` (attempt ${answer.attempt})`;
  const reason = answer.reason ? ` — ${answer.reason.slice(0, 200)}` : '';
  return {
    tone: settled ? 'done' : 'failed',
    text: `Reprocessed in ${pipeline}: ${outcome ?? 'skipped'}${attempt}${reason}.`,
  };
}

export function dropsPage(view: DropsView): Response {
  return page({
    title: 'Drops',
    viewer: view.viewer,
    current: 'drops',
    body: html`<h1>Drops</h1>
${noticeBox(view.notice)}
<p>Every pipeline's dropped files by state, as <code>warehouse-ingest status</code> shows them. <strong>Reprocess</strong> tries an input again now, from where it lies, as <code>warehouse-ingest reprocess</code> does; each try counts an attempt.</p>
${
  view.drops.length === 0
    ? html`<p>This service runs no pipeline.</p>`
    : view.drops.map((drop, n) => dropItem(view.viewer, drop, n))
}`,
  });
}
