import type { ScheduleRow } from '@leasehold/core';
import { formatTime } from './format.js';
import { h, type Html } from './html.js';
import { layout } from './layout.js';
import type { PageContext } from './page-context.js';

/** Recurring schedules: cron, last tick, whether a scheduler runs them; pause / resume. */
export function schedulesPage(ctx: PageContext, rows: readonly ScheduleRow[], changed: string | null): Html {
  return layout(ctx, 'schedules', 'Schedules', h`<h1>Schedules</h1>
${changed === null ? '' : h`<p role="status" class="ok">${changed}</p>`}
${rows.length === 0 ? h`<p class="muted">No schedules: a worker declares them with <code>defineSchedule</code>.</p>` : h`
<div class="scroll" role="region" aria-labelledby="cap-sched" tabindex="0"><table class="data">
<caption id="cap-sched">Schedules by name</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Task</th><th scope="col">Cron</th><th scope="col">Time zone</th><th scope="col">Last tick</th><th scope="col">State</th>${ctx.readOnly ? '' : h`<th scope="col">Action</th>`}</tr></thead>
<tbody>${rows.map((r) => h`<tr>
<th scope="row">${r.name}</th><td>${r.taskName}</td><td><code>${r.cron}</code></td><td>${r.timezone}</td>
<td>${r.lastTick === null ? h`<span class="muted">never</span>` : formatTime(r.lastTick)}</td>
<td>${r.pausedAt !== null ? h`<span class="status status-dead">paused</span> since ${formatTime(r.pausedAt)}` : r.alive ? h`<span class="status status-done">running</span>` : h`<span class="status status-pending">no scheduler alive</span>`}</td>
${ctx.readOnly ? '' : h`<td><form method="post" action="${ctx.base}/schedules/${r.pausedAt === null ? 'pause' : 'resume'}">
<input type="hidden" name="_csrf" value="${ctx.csrf}"><input type="hidden" name="name" value="${r.name}">
<button type="submit" class="secondary">${r.pausedAt === null ? 'Pause' : 'Resume'}<span class="sr-only"> ${r.name}</span></button></form></td>`}
</tr>`)}</tbody></table></div>`}`);
}
