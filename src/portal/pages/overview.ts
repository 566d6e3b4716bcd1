import type { EndpointDeliveries } from '../../history/overview.js';
import type { LatestFailures } from '../../history/store.js';
import { html, type SafeHtml } from '../html.js';
import { outcomeBadge, sourceText } from './batches.js';
import { page, type Viewer, when } from './layout.js';
import { barChart, count, deliveryBar, deliveryLegend } from './overview-chart.js';
import { type OverviewDay, successRate } from './overview-figures.js';

/**
 * `/portal`, the portal's first page: how the business's batches went per day over the history's
 * retention (two charts and the same figures as a table), how each webhook endpoint delivered
 * over the last day, and the latest failures, each linking to its page. For an operator, the same
 * for the business chosen in the banner, or for every business.
 */

export interface OverviewView {
  readonly viewer: Viewer;
  /** Oldest first, one per day of the window. */
  readonly days: readonly OverviewDay[];
  readonly endpoints: readonly EndpointDeliveries[];
  readonly failures: LatestFailures;
}

const sum = (days: readonly OverviewDay[], field: keyof Omit<OverviewDay, 'day'>) =>
  days.reduce((total, day) => total + day[field], 0);

/** Whose figures these are, in words. */
function whose(viewer: Viewer): string {
  if (viewer.role === 'business') return viewer.businessId;
  return viewer.business ?? 'Every business';
}

function totals(days: readonly OverviewDay[]): SafeHtml {
  const tile = (label: string, value: number, tone: string) =>
    html`<div class="tile ${tone}"><dt>${label}</dt><dd>${count(value)}</dd></div>`;
  return html`<dl class="tiles">
${tile('Batches accepted', sum(days, 'acceptedBatches'), 'good')}
${tile('Batches refused', sum(days, 'refusedBatches'), 'bad')}
${tile('Records accepted', sum(days, 'acceptedRecords'), 'good')}
${tile('Records refused', sum(days, 'refusedRecords'), 'bad')}
</dl>`;
}

function dayTable(days: readonly OverviewDay[]): SafeHtml {
  return html`<details class="figures">
<summary>The same figures as a table</summary>
<table>
<caption>Batches and records per day (UTC), oldest first</caption>
<thead><tr><th scope="col">Day</th><th scope="col" class="number">Batches accepted</th><th scope="col" class="number">Batches refused</th><th scope="col" class="number">Records accepted</th><th scope="col" class="number">Records refused</th></tr></thead>
<tbody>${days.map(
    (day) =>
      html`<tr><th scope="row">${day.day}</th><td class="number">${count(day.acceptedBatches)}</td><td class="number">${count(day.refusedBatches)}</td><td class="number">${count(day.acceptedRecords)}</td><td class="number">${count(day.refusedRecords)}</td></tr>`,
  )}</tbody>
</table>
</details>`;
}

/** Each endpoint's last day: its events by how they stand, a bar of them, its success rate. */
export function deliveriesTable(
  viewer: Viewer,
  endpoints: readonly EndpointDeliveries[],
): SafeHtml {
  if (endpoints.length === 0) return html`<p>No delivery attempts in the last 24 hours.</p>`;
  const several = viewer.role === 'operator';
  return html`<table class="deliveries">
<caption>Events per endpoint by how their latest attempt in the last 24 hours ended, and the share of attempts delivered</caption>
<thead><tr>${several && html`<th scope="col">Business</th>`}<th scope="col">Endpoint</th><th scope="col" class="number">Delivered</th><th scope="col" class="number">Retrying</th><th scope="col" class="number">Dead</th><th scope="col"><span class="visually-hidden">Events, as a bar</span></th><th scope="col" class="number">Success rate</th></tr></thead>
<tbody>${endpoints.map(
    (endpoint, n) => html`<tr>
${several && html`<td>${endpoint.businessId}</td>`}
<th scope="row"><code>${endpoint.endpoint}</code></th>
<td class="number">${count(endpoint.delivered)}</td>
<td class="number">${count(endpoint.retrying)}</td>
<td class="number">${count(endpoint.dead)}</td>
<td>${deliveryBar(`endpoint-${n}`, endpoint)}</td>
<td class="number"><strong>${successRate(endpoint.deliveredAttempts, endpoint.attempts)}</strong><br><span class="muted">${count(endpoint.deliveredAttempts)} of ${count(endpoint.attempts)} attempts</span></td>
</tr>`,
  )}</tbody>
</table>
<p>${deliveryLegend()}</p>`;
}

/** The problem's title, or the outcome, in a few words. */
function reason(problem: unknown, outcome: string): string {
  const title = (problem as { title?: unknown } | undefined)?.title;
  return typeof title === 'string' ? title : outcome;
}

function failuresSection(viewer: Viewer, failures: LatestFailures): SafeHtml {
  const several = viewer.role === 'operator';
  return html`<div class="failures">
<section aria-labelledby="refused-batches">
<h3 id="refused-batches">Refused batches</h3>
${
  failures.batches.length === 0
    ? html`<p>None kept.</p>`
    : html`<ul class="failure-list">${failures.batches.map(
        (
          batch,
        ) => html`<li><a href="/portal/batches/${encodeURIComponent(batch.correlationId)}" class="id">${batch.correlationId}</a>
<span>${outcomeBadge(batch.outcome)} · ${reason(batch.problem, batch.outcome)}</span>
<span class="muted">${when(batch.at)} · ${sourceText(batch.source)}${several && ` · ${batch.businessId}`}</span></li>`,
      )}</ul>`
}
</section>
<section aria-labelledby="failed-deliveries">
<h3 id="failed-deliveries">Failed deliveries</h3>
${
  failures.attempts.length === 0
    ? html`<p>None kept.</p>`
    : html`<ul class="failure-list">${failures.attempts.map(
        (
          attempt,
        ) => html`<li><a href="/portal/events/${encodeURIComponent(attempt.eventId)}" class="id">${attempt.eventId}</a>
<span>${outcomeBadge(attempt.end)}${attempt.status !== undefined && ` · HTTP ${attempt.status}`} · <code>${attempt.endpoint}</code></span>
<span class="muted">${when(attempt.at)}${several && ` · ${attempt.businessId}`}</span></li>`,
      )}</ul>`
}
</section>
</div>`;
}

export function overviewPage(view: OverviewView): Response {
  const { days } = view;
  const span = days.length === 0 ? '' : `${days[0]?.day} to ${days.at(-1)?.day}`;
  const chartDays = (kind: 'Batches' | 'Records') =>
    days.map((day) => ({
      day: day.day,
      accepted: day[`accepted${kind}`],
      refused: day[`refused${kind}`],
    }));
  return page({
    title: 'Overview',
    viewer: view.viewer,
    current: 'overview',
    body: html`<h1>Overview</h1>
<p class="lead">${whose(view.viewer)}: the last ${days.length} days (${span}, UTC) as the history keeps them.</p>
${totals(days)}
<section aria-labelledby="per-day">
<h2 id="per-day">Batches and records per day</h2>
<div class="charts">
${barChart({ id: 'chart-batches', title: 'Batches per day', unit: 'batches', days: chartDays('Batches') })}
${barChart({ id: 'chart-records', title: 'Records per day', unit: 'records', days: chartDays('Records') })}
</div>
${dayTable(days)}
<p><a href="/portal/batches">Every batch</a></p>
</section>
<section aria-labelledby="deliveries">
<h2 id="deliveries">Webhook deliveries, last 24 hours</h2>
${deliveriesTable(view.viewer, view.endpoints)}
</section>
<section aria-labelledby="failures">
<h2 id="failures">Latest failures</h2>
${failuresSection(view.viewer, view.failures)}
</section>`,
  });
}
