import { BAR_LABELS, type TimelineBar } from '../run/timeline-bars.js';
import { formatDuration, formatTime } from './format.js';
import { h, type Html } from './html.js';

// each bar is drawn in a track 1,000 units wide that stretches to the width there is (text stays
// HTML, so it never shrinks): beside its label on a wide screen, below it on a phone
const TRACK = 1_000;
const MIN_BAR = 6;

/** The run's timeline as a picture (bars on a time axis) and as a table with the same facts. */
export function runTimeline(bars: readonly TimelineBar[], from: Date, now: Date, path: string): Html {
  if (bars.length === 0) return h`<p class="muted">Nothing recorded yet: no steps, signals or children.</p>`;
  const t0 = Math.min(from.getTime(), ...bars.map((b) => b.start.getTime()));
  const t1 = Math.max(t0 + 1, now.getTime(), ...bars.map((b) => b.end.getTime()));
  const x = (d: Date) => ((d.getTime() - t0) / (t1 - t0)) * TRACK;
  const span = t1 - t0;
  return h`<figure class="tl" aria-labelledby="tl-title">
<figcaption id="tl-title">Timeline of the run <span class="muted">— ${bars.length} entries over ${formatDuration(span)} from ${formatTime(new Date(t0))}; the table below lists the same facts</span></figcaption>
<div class="tl-row tl-axis" aria-hidden="true"><span class="tl-label"></span><span class="tl-ticks"><span>${formatTime(new Date(t0)).slice(11)}</span><span>+${formatDuration(span / 2)}</span><span>+${formatDuration(span)}</span></span><span class="tl-dur"></span></div>
<ol class="tl-rows">${bars.map((b) => bar(b, x, x(now)))}</ol>
<ul class="tl-legend" aria-hidden="true">${(['step', 'db', 'sleep', 'wait', 'spawn', 'signal', 'child'] as const).map((k) => h`<li><svg width="14" height="10"><rect class="tl-bar tl-${k}" width="14" height="10"></rect></svg> ${BAR_LABELS[k]}</li>`)}<li>faded, dashed: still under way; the red line is now</li></ul>
</figure>
${timelineTable(bars, path)}`;
}

function bar(b: TimelineBar, x: (d: Date) => number, now: number): Html {
  const x1 = Math.min(x(b.start), TRACK - MIN_BAR);
  const w = Math.max(MIN_BAR, x(b.end) - x1);
  const claim = b.leaseVersion === null ? '' : ` · v${b.leaseVersion}`;
  return h`<li class="tl-row"><span class="tl-label">${BAR_LABELS[b.kind]} <b>${b.name}</b></span>
<svg class="tl-track" viewBox="0 0 ${TRACK} 12" preserveAspectRatio="none" aria-hidden="true">
<line class="tl-grid" x1="${TRACK / 2}" x2="${TRACK / 2}" y1="0" y2="12" vector-effect="non-scaling-stroke"></line>
<rect class="tl-bar tl-${b.kind}${b.open ? ' tl-open' : ''}" x="${x1.toFixed(1)}" y="1" width="${w.toFixed(1)}" height="10" vector-effect="non-scaling-stroke"></rect>
<line class="tl-now" x1="${now.toFixed(1)}" x2="${now.toFixed(1)}" y1="0" y2="12" vector-effect="non-scaling-stroke"></line>
</svg>
<span class="tl-dur">${duration(b)}${claim}</span></li>`;
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
