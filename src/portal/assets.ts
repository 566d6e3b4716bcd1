/**
 * The portal's one stylesheet, served at /portal/assets/portal.css. Kept in a module rather than
 * a .css file so that the TypeScript build (which copies nothing else) ships it. Colours pass
 * WCAG AA contrast on their backgrounds; every focusable element shows a thick outline.
 */
export const PORTAL_CSS = `:root {
  --ink: #1b1f24; --muted: #4a5360; --line: #c9d1d9; --paper: #ffffff; --band: #f3f5f7;
  --accent: #0b57d0; --accent-ink: #ffffff; --bad: #a4161a; --good: #1a6b34; --focus: #f5b700;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink); background: var(--paper); line-height: 1.5;
}
body { margin: 0; }
.skip { position: absolute; left: -999px; top: 0; }
.skip:focus { left: 1rem; top: 1rem; background: var(--paper); padding: .5rem 1rem; z-index: 1; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; box-shadow: 0 0 0 5px var(--ink); }
.banner { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem 2rem;
  padding: .75rem 1.5rem; background: var(--band); border-bottom: 1px solid var(--line); }
.brand { margin: 0; font-weight: 700; }
.banner nav ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; }
.banner nav a { color: var(--ink); text-decoration: none; padding: .25rem .5rem; border-radius: 4px; }
.banner nav a:hover { text-decoration: underline; }
.banner nav a[aria-current="page"] { background: var(--ink); color: var(--paper); }
.who { margin-left: auto; display: flex; align-items: center; gap: 1rem; }
.who p { margin: 0; }
main { padding: 1rem 1.5rem 3rem; max-width: 72rem; }
main:focus { outline: none; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; }
a { color: var(--accent); }
button, .button { font: inherit; padding: .45rem 1rem; border-radius: 4px; cursor: pointer;
  border: 1px solid var(--accent); background: var(--accent); color: var(--accent-ink); text-decoration: none; }
.who button { background: var(--paper); color: var(--accent); }
form.filters { display: flex; flex-wrap: wrap; gap: .75rem 1.5rem; align-items: flex-end; margin-bottom: 1rem; }
form.filters label, form.lookup label { display: block; font-weight: 600; }
select, input[type="text"] { font: inherit; padding: .35rem .5rem; border: 1px solid var(--muted);
  border-radius: 4px; background: var(--paper); color: var(--ink); min-width: 12rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
caption { text-align: left; color: var(--muted); padding: .25rem 0; }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--band); }
td.number, th.number { text-align: right; }
code, .id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; word-break: break-all; }
td code { word-break: normal; white-space: nowrap; }
.outcome { font-weight: 700; }
.outcome-accepted, .outcome-validated, .outcome-duplicate { color: var(--good); }
.outcome-rejected, .outcome-dead, .outcome-error, .outcome-unavailable { color: var(--bad); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1.5rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
.notice { border-left: 4px solid var(--bad); background: #fdf1f1; padding: .75rem 1rem; }
.pager { display: flex; gap: 1rem; }
.notice-box { padding: .75rem 1rem; border-left: 4px solid var(--good); background: #eef7f0; }
.notice-box.failed { border-left-color: var(--bad); background: #fdf1f1; }
article.item { border: 1px solid var(--line); border-radius: 6px; padding: 0 1rem .75rem; margin: 1rem 0; }
article.item h2 { margin-top: .75rem; }
article.item form { margin-top: .5rem; }
td.excerpt code { white-space: pre-wrap; word-break: break-all; }
.outcome-delivered { color: var(--good); }
.outcome-failed, .outcome-gone, .outcome-aborted, .outcome-disabled { color: var(--bad); }
form.picker { display: flex; align-items: center; gap: .5rem; }
form.sign-in { display: grid; gap: .75rem; max-width: 24rem; }
form.sign-in label { display: block; font-weight: 600; }
input[type="password"] { font: inherit; padding: .35rem .5rem; border: 1px solid var(--muted);
  border-radius: 4px; background: var(--paper); color: var(--ink); min-width: 12rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.muted { color: var(--muted); }
.lead { color: var(--muted); margin-top: -.5rem; }
dl.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(10rem, 1fr)); gap: .75rem; margin: 1rem 0; }
.tile { border: 1px solid var(--line); border-top: 4px solid var(--good); border-radius: 6px; padding: .5rem .9rem; background: var(--paper); }
.tile.bad { border-top-color: var(--bad); }
.tile dt { color: var(--muted); font-size: .9rem; }
.tile dd { margin: 0; font-size: 1.6rem; font-weight: 700; font-variant-numeric: tabular-nums; }
.charts { display: grid; gap: 1rem; }
figure.chart { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem .75rem; }
figure.chart svg text { font-size: 13px; fill: var(--muted); font-family: inherit; }
figure.chart svg text.empty { font-size: 15px; fill: var(--ink); }
figure.chart figcaption { display: flex; flex-wrap: wrap; align-items: center; gap: .25rem 1.5rem; font-size: .9rem; }
figure.chart .chart-title { font-size: 1rem; }
figure.chart .totals { margin-left: auto; }
tbody th { background: transparent; }
.legend { display: inline-flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center; }
.legend > span { display: inline-flex; align-items: center; gap: .35rem; }
svg.swatch { flex: none; }
svg.defs { position: absolute; width: 0; height: 0; }
.totals { color: var(--muted); }
details.figures { margin: .75rem 0; }
details.figures summary { cursor: pointer; color: var(--accent); }
table.deliveries td, table.deliveries th { vertical-align: middle; }
svg.delivery-bar { display: block; border-radius: 3px; }
.failures { display: grid; grid-template-columns: repeat(auto-fit, minmax(22rem, 1fr)); gap: 0 2rem; }
h3 { font-size: 1.05rem; margin: 1rem 0 .25rem; }
ul.failure-list { list-style: none; padding: 0; margin: 0; }
ul.failure-list li { display: grid; gap: .1rem; padding: .5rem 0; border-bottom: 1px solid var(--line); }
ul.failure-list .muted { font-size: .9rem; }
ol.records { padding-left: 2.5rem; columns: 16rem; }
`;
