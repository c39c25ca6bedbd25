import type { LimitRow, Rate } from '@leasehold/core';
import { formatCount, formatDuration, formatPeriod, formatTime } from './format.js';
import { h, type Html } from './html.js';
import { layout } from './layout.js';
import { movedTasks, type MovedTask } from './limit-staleness.js';
import type { PageContext } from './page-context.js';

const NONE = h`<span class="muted">—</span>`;

/**
 * Flow-control limits (`defineLimit`): bounds, what runs and waits under each now, and when a
 * worker last declared it. Read-only. `rows` is null on a schema that has no limits table yet.
 */
export function limitsPage(ctx: PageContext, rows: readonly LimitRow[] | null, now: Date): Html {
  return layout(ctx, 'limits', 'Limits', h`<h1>Limits</h1>
${rows === null ? h`<p class="notice">This schema has no limits table yet: it was migrated before flow control
(core migration 7). <code>leasehold migrate</code> adds it; see <code>docs/flow-control.md</code>.</p>`
    : rows.length === 0 ? h`<p class="muted">No limits: a worker records them when it starts, from tasks given a <code>limit</code> made by <code>defineLimit</code>.</p>`
    : limitTable(rows, now)}
<p class="muted">Limits are read-only here: they are set in code, and a changed bound applies from the next worker start.
Each worker records its tasks' limits when it starts, so <em>last declared</em> is the latest such start.
A limit removed from the code keeps its row and is no longer declared: its date only grows older, and tasks enqueued under it
still run within its bounds. It is marked stale once its tasks are declared under another limit.</p>`);
}

function limitTable(rows: readonly LimitRow[], now: Date): Html {
  const moved = movedTasks(rows);
  return h`<div class="scroll" role="region" aria-labelledby="cap-limits" tabindex="0"><table class="data">
<caption id="cap-limits">Limits by name, with what runs and waits under each now</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Tasks</th><th scope="col" class="num">Concurrency</th><th scope="col" class="num">Per key</th>
<th scope="col">Rate</th><th scope="col">Rate per key</th><th scope="col">Running now</th><th scope="col">Starts in window</th>
<th scope="col" class="num">Pending</th><th scope="col">Last declared</th></tr></thead>
<tbody>${rows.map((l) => h`<tr>
<th scope="row">${l.name}</th><td>${l.taskNames.join(', ')}</td>
<td class="num">${l.concurrency ?? NONE}</td><td class="num">${l.concurrencyPerKey ?? NONE}</td>
<td>${rate(l.rate)}</td><td>${rate(l.ratePerKey)}</td>
<td>${running(l)}</td><td>${l.rate === null ? NONE : `${formatCount(l.startsInWindow)} of ${formatCount(l.rate.limit)} in ${formatPeriod(l.rate.periodMs)}`}</td>
<td class="num">${formatCount(l.waiting)}</td>
<td>${lastDeclared(l, now, moved.get(l.name) ?? [])}</td>
</tr>`)}</tbody></table></div>`;
}

/** `50 per 1 s`. */
function rate(r: Rate | null): Html | string {
  return r === null ? NONE : `${formatCount(r.limit)} per ${formatPeriod(r.periodMs)}`;
}

/** `2 of 3, on 2 keys`: leases holding a slot, against the bound, and how many keys they hold. */
function running(l: LimitRow): string {
  const of = l.concurrency === null ? '' : ` of ${formatCount(l.concurrency)}`;
  const keys = l.concurrencyPerKey === null && l.ratePerKey === null ? '' : `, on ${formatCount(l.runningKeys)} key${l.runningKeys === 1 ? '' : 's'}`;
  return `${formatCount(l.running)}${of}${keys}`;
}

function lastDeclared(l: LimitRow, now: Date, moved: readonly MovedTask[]): Html {
  const age = formatDuration(Math.max(0, now.getTime() - l.seenAt.getTime()));
  const when = h`<time datetime="${l.seenAt.toISOString()}">${formatTime(l.seenAt)}</time> <span class="muted">(${age} ago${l.seenBy === null ? '' : `, by ${l.seenBy}`})</span>`;
  if (moved.length === 0) return when;
  const stale = moved.length === l.taskNames.length;
  return h`${when}<br>${stale ? h`<span class="status status-pending">stale</span> ` : ''}${moved.map(
    (m, i) => h`${i > 0 ? '; ' : ''}${m.taskName} declared under ${m.limit} since ${formatTime(m.seenAt)}`,
  )}`;
}
