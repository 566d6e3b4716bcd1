import { html, type SafeHtml } from '../html.js';

/**
 * The overview's bar chart as server-rendered SVG: the portal runs no script (its CSP), so the
 * chart is markup, built here by pure functions of the figures (tested alone,
 * test/portal/overview-chart.test.ts). Each day is one stacked bar, accepted below and refused
 * above it. Readable without colour: the refused part is hatched and outlined, the legend says
 * which is which in words, every bar carries its figures as a `<title>`, and the chart as a whole
 * is an image named by its title and a description with the totals; the page shows the same
 * figures as a table. Only presentation attributes and classes: the CSP refuses inline styles.
 */

/** One day's bar. */
export interface ChartDay {
  /** `YYYY-MM-DD`. */
  readonly day: string;
  readonly accepted: number;
  readonly refused: number;
}

export interface ChartInput {
  /** Unique on the page: the ids of its title, description and hatching derive from it. */
  readonly id: string;
  /** `Batches per day`. */
  readonly title: string;
  /** What is counted, plural: `batches`, `records`. */
  readonly unit: string;
  readonly days: readonly ChartDay[];
}

const WIDTH = 1000;
const HEIGHT = 250;
const LEFT = 56;
const RIGHT = 12;
const TOP = 16;
const BOTTOM = 40;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;
/** Gridlines above the baseline. */
const TICKS = 4;
/** Day labels under the axis at most (with more days, every n-th, ending on the last). */
const MAX_LABELS = 10;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The smallest 1, 2 or 5 × 10ⁿ at or above `value`, divisible into `TICKS` whole steps. */
export function niceMax(value: number): number {
  if (value <= TICKS) return TICKS;
  const magnitude = 10 ** Math.floor(Math.log10(value / TICKS));
  for (const step of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) {
    const top = step * magnitude * TICKS;
    if (top >= value && Number.isInteger(top / TICKS)) return top;
  }
  return 10 * magnitude * TICKS;
}

/** `Nov 28` from `2026-11-28`. */
export function shortDay(day: string): string {
  const month = MONTHS[Number(day.slice(5, 7)) - 1] ?? day.slice(5, 7);
  return `${month} ${Number(day.slice(8, 10))}`;
}

/** `1,234` */
export const count = (n: number) => n.toLocaleString('en-US');

/** The indexes of the days labelled: all when few, else every n-th counted back from the last. */
export function labelledDays(n: number): Set<number> {
  const every = Math.max(1, Math.ceil(n / MAX_LABELS));
  const labelled = new Set<number>();
  for (let i = n - 1; i >= 0; i -= every) labelled.add(i);
  return labelled;
}

const fixed = (n: number) => Number(n.toFixed(2));

export function barChart(input: ChartInput): SafeHtml {
  const { id, days, unit } = input;
  const accepted = days.reduce((sum, day) => sum + day.accepted, 0);
  const refused = days.reduce((sum, day) => sum + day.refused, 0);
  const top = niceMax(Math.max(0, ...days.map((day) => day.accepted + day.refused)));
  const y = (value: number) => fixed(TOP + PLOT_H - (value / top) * PLOT_H);
  const slot = days.length === 0 ? PLOT_W : PLOT_W / days.length;
  const barWidth = fixed(Math.min(48, slot * 0.72));
  const labels = labelledDays(days.length);
  const span =
    days.length === 0
      ? 'no days'
      : days.length === 1
        ? (days[0]?.day ?? '')
        : `${days[0]?.day} to ${days.at(-1)?.day}`;
  const description = `${input.title}, ${span} (UTC): ${count(accepted)} ${unit} accepted and ${count(refused)} refused in all.`;

  const grid = Array.from({ length: TICKS + 1 }, (_, i) => {
    const value = (top / TICKS) * i;
    return html`<g class="tick"><line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y(value)}" y2="${y(value)}" stroke="#c9d1d9" stroke-width="1"${i === 0 ? html` class="baseline"` : ''}/><text x="${LEFT - 8}" y="${y(value) + 4}" text-anchor="end">${count(value)}</text></g>`;
  });

  const bars = days.map((day, i) => {
    const x = fixed(LEFT + slot * i + (slot - barWidth) / 2);
    const center = fixed(LEFT + slot * i + slot / 2);
    const acceptedTop = y(day.accepted);
    const refusedTop = y(day.accepted + day.refused);
    return html`<g class="day"><title>${shortDay(day.day)} (${day.day}): ${count(day.accepted)} accepted, ${count(day.refused)} refused</title>${
      day.accepted > 0
        ? html`<rect class="bar accepted" x="${x}" y="${acceptedTop}" width="${barWidth}" height="${fixed(y(0) - acceptedTop)}" fill="#1a6b34"/>`
        : ''
    }${
      day.refused > 0
        ? html`<rect class="bar refused" x="${x}" y="${refusedTop}" width="${barWidth}" height="${fixed(acceptedTop - refusedTop)}" fill="url(#${id}-hatch)" stroke="#a4161a" stroke-width="1.5"/>`
        : ''
    }${
      labels.has(i)
        ? html`<text class="day-label" x="${center}" y="${HEIGHT - BOTTOM + 18}" text-anchor="middle">${shortDay(day.day)}</text>`
        : ''
    }</g>`;
  });

  const empty =
    accepted + refused === 0
      ? html`<text class="empty" x="${LEFT + PLOT_W / 2}" y="${TOP + PLOT_H / 2}" text-anchor="middle">No ${unit} in these days</text>`
      : '';

  return html`<figure class="chart">
<figcaption><strong class="chart-title">${input.title}</strong> ${legend(id)} <span class="totals">${count(accepted)} ${unit} accepted, ${count(refused)} refused</span></figcaption>
<svg role="img" aria-labelledby="${id}-title ${id}-desc" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" preserveAspectRatio="xMidYMid meet">
<title id="${id}-title">${input.title}</title>
<desc id="${id}-desc">${description}</desc>
<defs><pattern id="${id}-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#a4161a" stroke-width="3"/></pattern></defs>
${grid}
${bars}
${empty}
</svg>
</figure>`;
}

/** The key, in words beside each swatch: the hatching, not the colour, tells refused apart. */
function legend(id: string): SafeHtml {
  const swatch = (fill: string, stroke: string) =>
    html`<svg class="swatch" aria-hidden="true" viewBox="0 0 16 16" width="16" height="16"><rect x="1" y="1" width="14" height="14" fill="${fill}" stroke="${stroke}" stroke-width="1.5"/></svg>`;
  return html`<span class="legend"><span>${swatch('#1a6b34', '#1a6b34')} Accepted (solid)</span> <span>${swatch(`url(#${id}-hatch)`, '#a4161a')} Refused (hatched)</span></span>`;
}

/** How an endpoint's events stand, for its bar. */
export interface DeliveryCounts {
  readonly delivered: number;
  readonly retrying: number;
  readonly dead: number;
}

const BAR_W = 160;
const BAR_H = 16;
const GOOD = '#1a6b34';
const WAIT = '#8a5300';
const BAD = '#a4161a';

/** The fills of an endpoint bar's three parts: solid, dotted, hatched (told apart without colour). */
function deliveryPatterns(id: string): SafeHtml {
  return html`<defs><pattern id="${id}-dots" patternUnits="userSpaceOnUse" width="5" height="5"><rect width="5" height="5" fill="#ffffff"/><circle cx="2.5" cy="2.5" r="1.5" fill="${WAIT}"/></pattern><pattern id="${id}-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="${BAD}" stroke-width="3"/></pattern></defs>`;
}

/**
 * One endpoint's events as a horizontal bar split into delivered, retrying and dead, in
 * proportion. Decorative beside the figures in its row (hidden from screen readers, which read
 * the figures).
 */
export function deliveryBar(id: string, counts: DeliveryCounts): SafeHtml {
  const total = counts.delivered + counts.retrying + counts.dead;
  const parts = [
    [counts.delivered, GOOD, GOOD],
    [counts.retrying, `url(#${id}-dots)`, WAIT],
    [counts.dead, `url(#${id}-hatch)`, BAD],
  ] as const;
  let x = 0;
  const rects = parts.map(([n, fill, stroke]) => {
    if (total === 0 || n === 0) return '';
    const width = fixed((n / total) * BAR_W);
    const rect = html`<rect x="${fixed(x)}" y="0" width="${width}" height="${BAR_H}" fill="${fill}" stroke="${stroke}" stroke-width="1"/>`;
    x += width;
    return rect;
  });
  return html`<svg class="delivery-bar" aria-hidden="true" focusable="false" viewBox="0 0 ${BAR_W} ${BAR_H}" width="${BAR_W}" height="${BAR_H}">${deliveryPatterns(id)}<rect x="0" y="0" width="${BAR_W}" height="${BAR_H}" fill="#f3f5f7"/>${rects}</svg>`;
}

/** The key of the endpoint bars, each swatch beside its name. */
export function deliveryLegend(): SafeHtml {
  const swatch = (fill: string, stroke: string) =>
    html`<svg class="swatch" aria-hidden="true" focusable="false" viewBox="0 0 16 16" width="16" height="16"><rect x="1" y="1" width="14" height="14" fill="${fill}" stroke="${stroke}" stroke-width="1.5"/></svg>`;
  return html`<span class="legend"><svg class="defs" aria-hidden="true" focusable="false" width="0" height="0">${deliveryPatterns('legend')}</svg><span>${swatch(GOOD, GOOD)} Delivered (solid)</span> <span>${swatch('url(#legend-dots)', WAIT)} Retrying (dotted)</span> <span>${swatch('url(#legend-hatch)', BAD)} Dead (hatched)</span></span>`;
}
