import { html, type SafeHtml } from '../html.js';

/**
 * The frame of every portal page: landmarks (banner, navigation, main), a skip link, the
 * business signed in and its sign-out form. Served with a strict Content-Security-Policy: no
 * script runs on a portal page, and only the portal's own stylesheet loads.
 */

/**
 * Who is signed in, for the banner and the sign-out form: a business, or an operator with the
 * businesses to choose from and the one chosen (null: all).
 */
export type Viewer =
  | { readonly role: 'business'; readonly businessId: string; readonly csrf: string }
  | {
      readonly role: 'operator';
      readonly operator: string;
      readonly business: string | null;
      readonly businesses: readonly string[];
      readonly csrf: string;
    };

export interface PageOptions {
  readonly title: string;
  readonly body: SafeHtml;
  /** Absent on pages shown before sign-in or after sign-out. */
  readonly viewer?: Viewer;
  /** The navigation entry of this page, marked `aria-current`. */
  readonly current?: Section;
  /** @default 200 */
  readonly status?: number;
  readonly headers?: Record<string, string>;
}

/** The portal's sections, in the order the navigation lists them. */
const SECTIONS = [
  ['overview', '/portal', 'Overview'],
  ['batches', '/portal/batches', 'Batches'],
  ['events', '/portal/events', 'Events'],
  ['webhooks', '/portal/webhooks', 'Endpoints'],
  ['records', '/portal/records', 'Record lookup'],
] as const;
/** An operator's sections besides them: never listed to a business. */
const OPERATOR_SECTIONS = [
  ['drops', '/portal/operator/drops', 'Drops'],
  ['dead-letters', '/portal/operator/dead-letters', 'Dead letters'],
] as const;
type Section = (typeof SECTIONS)[number][0] | (typeof OPERATOR_SECTIONS)[number][0];

/** What a form's POST did, shown once on the page it returns to (role="status"). */
export interface Notice {
  readonly tone: 'done' | 'failed';
  readonly text: string;
}

export function noticeBox(notice: Notice | undefined): SafeHtml {
  return html`${notice && html`<p role="status" class="notice-box ${notice.tone}">${notice.text}</p>`}`;
}

export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy':
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  // A sign-in page's URL carries its token: never sent to another site. Not `no-referrer`: with
  // it browsers send `Origin: null` on the portal's own forms, which the origin check refuses.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

function navigation(viewer: Viewer, current: PageOptions['current']): SafeHtml {
  const sections = viewer.role === 'operator' ? [...SECTIONS, ...OPERATOR_SECTIONS] : SECTIONS;
  return html`<nav aria-label="Portal"><ul>${sections.map(
    ([name, href, label]) =>
      html`<li><a href="${href}"${current === name ? html` aria-current="page"` : ''}>${label}</a></li>`,
  )}</ul></nav>`;
}

function banner(viewer: Viewer | undefined, current: PageOptions['current']): SafeHtml {
  if (!viewer)
    return html`<header class="banner"><p class="brand">warehouse-ingest portal</p></header>`;
  return html`<header class="banner">
  <p class="brand">warehouse-ingest portal</p>
  ${navigation(viewer, current)}
  <div class="who">
    ${
      viewer.role === 'business'
        ? html`<p>Signed in as <strong>${viewer.businessId}</strong></p>`
        : html`<p>Operator <strong>${viewer.operator}</strong></p>${businessPicker(viewer)}`
    }
    <form method="post" action="/portal/logout">
      <input type="hidden" name="csrf" value="${viewer.csrf}">
      <button type="submit">Sign out</button>
    </form>
  </div>
</header>`;
}

/** An operator's choice of business for the business pages: one, or all of them. */
function businessPicker(viewer: Extract<Viewer, { role: 'operator' }>): SafeHtml {
  const option = (value: string, label: string, chosen: boolean) =>
    html`<option value="${value}"${chosen ? html` selected` : ''}>${label}</option>`;
  return html`<form method="post" action="/portal/operator/business" class="picker">
      <input type="hidden" name="csrf" value="${viewer.csrf}">
      <label for="business-picker">Business</label>
      <select id="business-picker" name="business">${option('', 'All businesses', viewer.business === null)}${viewer.businesses.map(
        (id) => option(id, id, id === viewer.business),
      )}</select>
      <button type="submit">View</button>
    </form>`;
}

export function page(options: PageOptions): Response {
  const body = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · warehouse-ingest portal</title>
<link rel="stylesheet" href="/portal/assets/portal.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${banner(options.viewer, options.current)}
<main id="main" tabindex="-1">
${options.body}
</main>
</body>
</html>
`;
  return new Response(body.text, {
    status: options.status ?? 200,
    headers: { ...PAGE_HEADERS, ...options.headers },
  });
}

/** A page that only says something: a refusal, a missing batch, a signed-out notice. */
export function messagePage(
  status: number,
  title: string,
  text: string,
  viewer?: Viewer,
  more?: SafeHtml,
): Response {
  return page({
    status,
    title,
    ...(viewer && { viewer }),
    body: html`<h1>${title}</h1><p>${text}</p>${more}`,
  });
}

/** `2026-03-02 14:05:09 UTC`: a time as people read it, in one zone for every reader. */
export function when(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/**
 * A list's pager: back to its first page, on to the next, both keeping the filters (and a
 * limit) as chosen; the next page's address adds the API's cursor.
 */
export function pager(
  path: string,
  filters: Readonly<Record<string, string | number | undefined>>,
  view: { readonly paged: boolean; readonly next?: string | undefined },
  items: string,
): SafeHtml {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters))
    if (value !== undefined && value !== '') query.set(name, String(value));
  const first = `${path}${query.size ? `?${query}` : ''}`;
  if (view.next) query.set('cursor', view.next);
  return html`<nav class="pager" aria-label="Pages">
${view.paged && html`<a href="${first}">Newest ${items}</a>`}
${view.next && html`<a href="${path}?${query.toString()}">Older ${items}</a>`}
</nav>`;
}
