import { timelineBars } from '../run/timeline-bars.js';
import { CHILDREN_SHOWN, type RunView } from '../run/run-view.js';
import { COUNT_CAP } from '../sql/task-grandchildren.js';
import { formatCount, formatJson, formatTime } from './format.js';
import { h, type Html } from './html.js';
import { statusBadge } from './layout.js';
import { runTimeline } from './run-timeline.js';

/** The run sections of a task's page, in order: lineage, timeline, children, events, signals. */
export function runSections(v: RunView): Html {
  return h`${lineageSection(v)}
<section aria-labelledby="s-timeline"><h2 id="s-timeline">Timeline</h2>
${runTimeline(timelineBars(v.info, v.now), v.info.createdAt, v.now, v.path)}</section>
${childrenSection(v)}
${eventsSection(v)}
${signalsSection(v)}`;
}

function when(d: Date | null): Html {
  return d === null ? h`<span class="muted">—</span>` : h`<time datetime="${d.toISOString()}">${formatTime(d)}</time>`;
}

function lineageSection(v: RunView): Html | null {
  const { parentId, forkedFrom } = v.info;
  if (parentId === null && forkedFrom === null) return null;
  return h`<section aria-labelledby="s-lineage"><h2 id="s-lineage">Lineage</h2><dl class="facts">
${parentId === null ? '' : h`<div><dt>Spawned by</dt><dd><a href="${v.path}/${parentId}">#${parentId}</a></dd></div>`}
${forkedFrom === null ? '' : h`<div><dt>Forked from</dt><dd><a href="${v.path}/${forkedFrom}">#${forkedFrom}</a></dd></div>`}
</dl></section>`;
}

function childrenSection(v: RunView): Html | null {
  const children = v.info.children;
  if (children.length === 0) return null;
  const shown = children.slice(0, CHILDREN_SHOWN);
  const all = `${v.path}?${new URLSearchParams({ parent: v.info.id })}`;
  return h`<section aria-labelledby="s-children"><h2 id="s-children">Children (${formatCount(children.length)})</h2>
<ul class="tree">${shown.map((c) => {
    const grand = v.grandchildren.rows.filter((g) => g.parentId === c.id);
    const total = v.grandchildren.counts.get(c.id) ?? 0;
    return h`<li><a href="${v.path}/${c.id}">#${c.id}</a> ${c.name} ${statusBadge(c.status)} <span class="muted">ended ${when(c.doneAt)}</span>
${grand.length === 0 ? '' : h`<ul>${grand.map((g) => h`<li><a href="${v.path}/${g.id}">#${g.id}</a> ${g.name} ${statusBadge(g.status)}</li>`)}
${total > grand.length ? h`<li><a href="${v.path}?${new URLSearchParams({ parent: c.id })}">and ${formatCount(total - grand.length)}${total >= COUNT_CAP ? '+' : ''} more</a></li>` : ''}</ul>`}</li>`;
  })}</ul>
${children.length > shown.length ? h`<p><a href="${all}">All ${formatCount(children.length)} children in the task list</a></p>` : h`<p><a href="${all}">These children in the task list</a></p>`}
</section>`;
}

function eventsSection(v: RunView): Html | null {
  if (v.events === null || v.events.length === 0) return null;
  return h`<section aria-labelledby="s-events"><h2 id="s-events">Progress events</h2>
<div class="scroll" role="region" aria-label="Progress events" tabindex="0"><table class="data events">
<thead><tr><th scope="col">Key</th><th scope="col">Value</th><th scope="col">Set at</th><th scope="col" class="num">Claim</th></tr></thead>
<tbody>${v.events.map((e) => h`<tr><td>${e.key}</td><td><pre class="json inline">${formatJson(e.value)}</pre></td><td>${when(e.updatedAt)}</td><td class="num">${e.leaseVersion}</td></tr>`)}</tbody>
</table></div></section>`;
}

function signalsSection(v: RunView): Html | null {
  const signals = v.info.signals;
  if (signals.length === 0) return null;
  const pending = signals.filter((s) => s.consumedAt === null).length;
  return h`<section aria-labelledby="s-signals"><h2 id="s-signals">Signals (${signals.length - pending} received, ${pending} pending)</h2>
<div class="scroll" role="region" aria-label="Signals" tabindex="0"><table class="data signals">
<thead><tr><th scope="col">Name</th><th scope="col">Sent</th><th scope="col">Taken by a wait</th></tr></thead>
<tbody>${signals.map((s) => h`<tr><td>${s.name}</td><td>${when(s.sentAt)}</td><td>${s.consumedAt === null ? h`<span class="status status-pending">pending</span>` : when(s.consumedAt)}</td></tr>`)}</tbody>
</table></div></section>`;
}
