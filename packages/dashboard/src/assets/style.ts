// The dashboard's one stylesheet, served as /assets/dashboard.css (the CSP allows no inline style).
// System fonts, a light and a dark scheme, tables that scroll sideways on a narrow screen.
export const STYLESHEET = `
:root { color-scheme: light dark; --bg: #fff; --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --panel: #f5f7fa;
  --accent: #1f5fbf; --dead: #b3261e; --pending: #8a5a00; --processing: #1f5fbf; --done: #1e7a3c; --focus: #f0b400; }
@media (prefers-color-scheme: dark) { :root { --bg: #14171d; --fg: #e6e9ef; --muted: #a2aabb; --line: #323947; --panel: #1c2029;
  --accent: #7fb0ff; --dead: #ff8a80; --pending: #f3c56b; --processing: #7fb0ff; --done: #7fd99a; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--bg); padding: .5rem 1rem; z-index: 2; }
.skip:focus { left: .5rem; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: .25rem 1.25rem; padding: .6rem 1.25rem; border-bottom: 1px solid var(--line); background: var(--panel); }
.brand { font-weight: 700; text-decoration: none; color: var(--fg); letter-spacing: .02em; }
.top ul { display: flex; flex-wrap: wrap; gap: .25rem .9rem; list-style: none; margin: 0; padding: 0; }
.top nav a { text-decoration: none; padding: .2rem 0; display: inline-block; }
.top nav a[aria-current="page"] { color: var(--fg); font-weight: 600; border-bottom: 2px solid var(--accent); }
.badge { font-size: .8rem; border: 1px solid var(--line); border-radius: 1rem; padding: .05rem .6rem; color: var(--muted); }
main { padding: 1rem 1.25rem 2rem; max-width: 1280px; }
h1 { font-size: 1.45rem; margin: .4rem 0 1rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .6rem; }
/* keys, names and errors are anyone's strings: a long one breaks rather than widen the page */
main h1, main h2, main p, main li { overflow-wrap: anywhere; }
.id { color: var(--muted); font-weight: 400; }
.muted { color: var(--muted); }
.foot { padding: 1rem 1.25rem; color: var(--muted); font-size: .85rem; border-top: 1px solid var(--line); }
.scroll { overflow-x: auto; max-width: 100%; }
table.data { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
table.data caption { text-align: left; color: var(--muted); padding: .3rem 0; font-size: .9rem; }
table.data th, table.data td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; white-space: nowrap; }
table.data thead th { font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
table.data td.error { white-space: normal; min-width: 16rem; max-width: 34rem; overflow-wrap: anywhere; color: var(--dead); font-size: .88rem; }
.num { text-align: right !important; }
/* the row's name stays in view while a wide table scrolls sideways on a narrow screen */
.scroll table.data th[scope="row"] { position: sticky; left: 0; background: var(--bg); z-index: 1; }
tr.has-dead th a { font-weight: 600; }
a.dead { color: var(--dead); font-weight: 700; }
.status { display: inline-block; font-size: .78rem; font-weight: 600; padding: .05rem .5rem; border-radius: .3rem; border: 1px solid currentColor; }
.status-pending { color: var(--pending); } .status-processing { color: var(--processing); }
.status-done { color: var(--done); } .status-dead { color: var(--dead); }
.chart { margin: .2rem 0 1rem; max-width: 760px; }
.chart svg { width: 100%; height: 110px; display: block; background: var(--panel); border-radius: .3rem; }
.chart rect { fill: var(--accent); } .chart .axis { stroke: var(--line); }
.chart figcaption { display: flex; justify-content: space-between; gap: .5rem; font-size: .8rem; color: var(--muted); }
.spark polyline { fill: none; stroke: var(--accent); stroke-width: 1.5; }
form.filters { display: flex; flex-wrap: wrap; gap: .6rem 1rem; align-items: end; margin: 0 0 1rem; padding: .8rem; background: var(--panel); border-radius: .4rem; }
form label { display: block; font-size: .82rem; color: var(--muted); margin-bottom: .15rem; }
input, select, button { font: inherit; color: inherit; }
input, select { background: var(--bg); border: 1px solid var(--line); border-radius: .3rem; padding: .35rem .5rem; min-height: 2.2rem; }
input[type=checkbox] { min-height: auto; width: 1.1rem; height: 1.1rem; }
form.resolve input[name=reason] { width: min(36rem, 100%); }
button { background: var(--accent); color: var(--bg); border: 0; border-radius: .3rem; padding: .45rem 1rem; min-height: 2.2rem; cursor: pointer; font-weight: 600; }
button.secondary { background: transparent; color: var(--accent); border: 1px solid var(--accent); }
.actions { display: flex; gap: .6rem; align-items: center; flex-wrap: wrap; }
form.resolve, form.run-action, form.confirm, form.login { display: grid; gap: .7rem; margin: .8rem 0; }
fieldset.scope { border: 0; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; }
fieldset.scope legend { font-size: .82rem; color: var(--muted); padding: 0; margin-bottom: .2rem; }
fieldset.scope label { display: inline-flex; align-items: center; gap: .4rem; font-size: 1rem; color: var(--fg); margin: 0; }
.callout { border: 1px solid var(--dead); border-left-width: 4px; border-radius: .4rem; padding: .2rem 1rem .6rem; margin: 0 0 1rem; }
.callout h2 { margin-top: .6rem; color: var(--dead); }
.notice { border-left: 4px solid var(--pending); padding: .5rem .8rem; background: var(--panel); }
.ok { border-left: 4px solid var(--done); padding: .5rem .8rem; background: var(--panel); }
dl.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr)); gap: .5rem 1.5rem; margin: 0; }
dl.facts dt { font-size: .8rem; color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre { background: var(--panel); padding: .8rem; border-radius: .4rem; overflow: auto; max-height: 28rem; white-space: pre-wrap; overflow-wrap: anywhere; font-size: .85rem; }
pre.error-text { color: var(--dead); }
.pager { display: flex; gap: 1.2rem; margin: .8rem 0; }
.confirm-list { padding-left: 1.2rem; } .confirm-list .error { color: var(--dead); font-size: .88rem; }
q.reason { font-weight: 600; }
/* a run's timeline: a row per entry, its bar in a track that stretches; below the label on a phone */
figure.tl { margin: .2rem 0 .6rem; padding: .6rem .8rem; border: 1px solid var(--line); border-radius: .4rem; background: var(--panel); }
figure.tl figcaption { font-weight: 600; margin-bottom: .4rem; } figure.tl figcaption .muted { font-weight: 400; font-size: .85rem; }
ol.tl-rows { list-style: none; margin: 0; padding: 0; }
.tl-row { display: grid; grid-template-columns: minmax(10rem, 16rem) 1fr 10rem; gap: .1rem .6rem; align-items: center; padding: .1rem 0; font-size: .85rem; }
.tl-label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; color: var(--muted); } .tl-label b { color: var(--fg); font-weight: 500; }
.tl-dur { color: var(--muted); font-size: .8rem; white-space: nowrap; font-variant-numeric: tabular-nums; }
.tl-ticks { display: flex; justify-content: space-between; color: var(--muted); font-size: .75rem; border-bottom: 1px solid var(--line); }
svg.tl-track { width: 100%; height: 14px; display: block; }
.tl-track .tl-grid { stroke: var(--line); } .tl-track .tl-now { stroke: var(--dead); stroke-dasharray: 2 2; }
.tl-bar { stroke: var(--fg); stroke-width: .5; }
.tl-step { fill: #4a7fd4; } .tl-db { fill: #2d9c8f; } .tl-sleep { fill: #9aa3b5; } .tl-wait { fill: #d39b2a; }
.tl-spawn { fill: #8a63d2; } .tl-patch, .tl-event { fill: #6b7280; } .tl-signal { fill: #c2557a; } .tl-child { fill: #3f9a4f; }
.tl-open { fill-opacity: .4; stroke-dasharray: 4 2; stroke-width: 1; }
.tl-legend { display: flex; flex-wrap: wrap; gap: .2rem 1rem; list-style: none; padding: 0; margin: .5rem 0 0; font-size: .8rem; color: var(--muted); }
.tl-legend svg { vertical-align: middle; }
ul.tree { padding-left: 1.2rem; } ul.tree ul { padding-left: 1.4rem; margin: .2rem 0; } ul.tree li { margin: .15rem 0; }
pre.inline { margin: 0; padding: .3rem .5rem; max-height: 10rem; min-width: 12rem; max-width: 30rem; }
.run-actions { display: grid; grid-template-columns: repeat(auto-fit, minmax(17rem, 1fr)); gap: 1rem; }
.run-actions form { border: 1px solid var(--line); border-radius: .4rem; padding: 0 .9rem .8rem; margin: 0; }
.run-actions h3 { font-size: 1rem; margin: .7rem 0 0; }
.run-actions input, .run-actions select, textarea { width: 100%; }
textarea { font: .9rem ui-monospace, SFMono-Regular, Menlo, monospace; color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: .3rem; padding: .35rem .5rem; }
.field-error { color: var(--dead); margin: .3rem 0 0; font-size: .9rem; }
form.find { align-items: end; }
@media (max-width: 640px) {
  body { font-size: 15px; } main { padding: .8rem; } .top { padding: .5rem .8rem; }
  form.filters > div { flex: 1 1 100%; } form.filters input, form.filters select { width: 100%; }
  table.data td.error { min-width: 12rem; }
  .tl-row { grid-template-columns: 1fr auto; } svg.tl-track, .tl-ticks { grid-column: 1 / -1; grid-row: 2; }
  .tl-axis .tl-label, .tl-axis .tl-dur { display: none; } .tl-axis .tl-ticks { grid-row: 1; }
}
`;
