import { BAR_LABELS, type TimelineBar } from '../run/timeline-bars.js';
import { formatDuration, formatTime } from './format.js';
import { h, type Html } from './html.js';

// the picture's geometry, in px: a label column, then the time axis; it keeps this width and
// scrolls sideways inside its region on a narrow screen rather than shrink its text
const LABEL_W = 220;
const PLOT_W = 540;
const ROW_H = 26;
const AXIS_H = 28;
const WIDTH = LABEL_W + PLOT_W + 20;
const MAX_LABEL = 30;

/** The run's timeline as a picture (SVG bars on a time axis) and as a table with the same facts. */
export function runTimeline(bars: readonly TimelineBar[], from: Date, now: Date, path: string): Html {
  if (bars.length === 0) return h`<p class="muted">Nothing recorded yet: no steps, signals or children.</p>`;
  const t0 = Math.min(from.getTime(), ...bars.map((b) => b.start.getTime()));
  const t1 = Math.max(t0 + 1, ...bars.map((b) => b.end.getTime()));
  const x = (d: Date) => LABEL_W + ((d.getTime() - t0) / (t1 - t0)) * PLOT_W;
  const height = AXIS_H + bars.length * ROW_H + 6;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => ({ at: LABEL_W + f * PLOT_W, text: f === 0 ? formatTime(new Date(t0)).slice(11) : `+${formatDuration((t1 - t0) * f)}` }));
  return h`<div class="scroll timeline" role="region" aria-label="Timeline picture" tabindex="0">
<svg class="tl" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-labelledby="tl-title tl-desc">
<title id="tl-title">Timeline of the run</title>
<desc id="tl-desc">${bars.length} entries from ${formatTime(new Date(t0))} over ${formatDuration(t1 - t0)}; the table below lists the same facts.</desc>
${ticks.map((t) => h`<line class="tl-grid" x1="${t.at}" x2="${t.at}" y1="${AXIS_H - 6}" y2="${height}"></line><text class="tl-tick" x="${t.at}" y="${AXIS_H - 10}" text-anchor="${t.at === LABEL_W ? 'start' : t.at === LABEL_W + PLOT_W ? 'end' : 'middle'}">${t.text}</text>`)}
${bars.map((b, i) => bar(b, i, x))}
${now.getTime() <= t1 ? h`<line class="tl-now" x1="${x(now)}" x2="${x(now)}" y1="${AXIS_H - 6}" y2="${height}"><title>now, ${formatTime(now)}</title></line>` : ''}
</svg>
</div>
<ul class="tl-legend" aria-hidden="true">${(['step', 'db', 'sleep', 'wait', 'spawn', 'signal', 'child'] as const).map((k) => h`<li><svg width="14" height="10"><rect class="tl-bar tl-${k}" width="14" height="10"></rect></svg> ${BAR_LABELS[k]}</li>`)}<li>hatched: still under way</li></ul>
${timelineTable(bars, path)}`;
}

function bar(b: TimelineBar, i: number, x: (d: Date) => number): Html {
  const y = AXIS_H + i * ROW_H;
  const x1 = x(b.start);
  const w = Math.max(3, x(b.end) - x1);
  const label = `${BAR_LABELS[b.kind]} ${b.name}`;
  const shown = label.length > MAX_LABEL ? `${label.slice(0, MAX_LABEL - 1)}…` : label;
  const claim = b.leaseVersion === null ? '' : ` · claim ${b.leaseVersion}`;
  return h`<g class="tl-row">
<text class="tl-label" x="4" y="${y + 17}">${shown}</text>
<rect class="tl-bar tl-${b.kind}${b.open ? ' tl-open' : ''}" x="${x1.toFixed(1)}" y="${y + 5}" width="${w.toFixed(1)}" height="${ROW_H - 10}" rx="2"><title>${label}: ${duration(b)}${claim}${b.note === '' ? '' : ` · ${b.note}`}</title></rect>
${b.leaseVersion === null ? '' : h`<text class="tl-claim" x="${Math.min(x1 + w + 4, LABEL_W + PLOT_W - 4)}" y="${y + 17}" text-anchor="${x1 + w + 40 > LABEL_W + PLOT_W ? 'end' : 'start'}">v${b.leaseVersion}</text>`}
</g>`;
}

/** "1 s", "≤ 120 ms" (start not recorded), "3 s so far". */
function duration(b: TimelineBar): string {
  const ms = b.end.getTime() - b.start.getTime();
  if (b.open) return `${formatDuration(ms)} so far`;
  if (b.startInferred) return ms === 0 ? 'start not recorded' : `≤ ${formatDuration(ms)}`;
  return formatDuration(ms);
}

function timelineTable(bars: readonly TimelineBar[], path: string): Html {
  return h`<div class="scroll" role="region" aria-label="Timeline table" tabindex="0">
<table class="data timeline-table">
<caption>The timeline as a table, oldest first. A step's start is not recorded: "≤" is the time since the claim's previous record.</caption>
<thead><tr><th scope="col">What</th><th scope="col">Name</th><th scope="col">Started</th><th scope="col">Ended</th><th scope="col">Duration</th><th scope="col" class="num">Claim (lease version)</th><th scope="col">Note</th></tr></thead>
<tbody>
${bars.map((b) => h`<tr class="tl-${b.kind}-row">
<td>${BAR_LABELS[b.kind]}</td>
<td>${b.kind === 'child' ? h`<a href="${path}/${b.id}">${b.name} #${b.id}</a>` : b.name}</td>
<td>${b.startInferred ? h`<span class="muted">not recorded</span>` : time(b.start)}</td>
<td>${b.open ? h`<span class="muted">—</span>` : time(b.end)}</td>
<td>${duration(b)}</td>
<td class="num">${b.leaseVersion ?? ''}</td>
<td>${b.note}</td>
</tr>`)}
</tbody>
</table>
</div>`;
}

function time(d: Date): Html {
  return h`<time datetime="${d.toISOString()}">${formatTime(d)}</time>`;
}
