import { html, type SafeHtml } from '../html.js';
import type { DeadLetterView, ReplayAnswer } from '../operator-actions.js';
import { type Notice, noticeBox, page, type Viewer, when } from './layout.js';

/**
 * `/portal/operator/dead-letters`: the events no endpoint took after every attempt, as the
 * dead-letter queue holds them (looked at, never taken), each with a Replay button: what
 * `warehouse-ingest events replay --id` does.
 */
export interface DeadLettersView {
  readonly viewer: Viewer;
  /** Undefined without a broker. */
  readonly letters?: readonly DeadLetterView[];
  readonly notice?: Notice;
}

function row(viewer: Viewer, letter: DeadLetterView): SafeHtml {
  return html`<tr>
<td>${Number.isNaN(Date.parse(letter.deadAt)) ? letter.deadAt : when(new Date(letter.deadAt))}</td>
<td class="id">${letter.id}</td>
<td>${letter.type}</td>
<td>${letter.businessId}</td>
<td>${letter.endpoint}</td>
<td>${letter.reason}</td>
<td class="number">${letter.attempts}</td>
<td class="excerpt"><code>${letter.lastFailure.slice(0, 200)}</code></td>
<td><form method="post" action="/portal/operator/dead-letters/${encodeURIComponent(letter.id)}/replay">
<input type="hidden" name="csrf" value="${viewer.csrf}">
<button type="submit" aria-label="Replay ${letter.id}">Replay</button>
</form></td>
</tr>`;
}

/** What one Replay did, as the page says it once. */
export function replayNotice(id: string, answer: ReplayAnswer): Notice {
  switch (answer.end) {
    case 'replayed':
      return { tone: 'done', text: `Event ${id} is back in the delivery queue.` };
    case 'held-back':
      return {
        tone: 'failed',
        text: `Event ${id} stays dead-lettered: its endpoint is ${answer.why}.`,
      };
    case 'not-found':
      return { tone: 'failed', text: `Event ${id} is no longer dead-lettered.` };
  }
}

export function deadLettersPage(view: DeadLettersView): Response {
  const { letters } = view;
  return page({
    title: 'Dead letters',
    viewer: view.viewer,
    current: 'dead-letters',
    body: html`<h1>Dead letters</h1>
${noticeBox(view.notice)}
${
  letters === undefined
    ? html`<p>This service runs without a message broker: it delivers no events, so none is dead.</p>`
    : html`<p>Events that failed every delivery attempt, newest first. <strong>Replay</strong> puts one back in the delivery queue with its attempts reset, as <code>warehouse-ingest events replay</code> does; one whose endpoint is backed off or disabled stays where it is.</p>
${
  letters.length === 0
    ? html`<p>No event is dead-lettered.</p>`
    : html`<table>
<caption>Dead-lettered events (${letters.length})</caption>
<thead><tr><th scope="col">Dead since</th><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Business</th><th scope="col">Endpoint</th><th scope="col">Why</th><th scope="col" class="number">Attempts</th><th scope="col">Last failure</th><th scope="col">Action</th></tr></thead>
<tbody>${letters.map((letter) => row(view.viewer, letter))}</tbody>
</table>`
}`
}`,
  });
}
