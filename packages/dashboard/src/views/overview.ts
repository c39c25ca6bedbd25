import type { TableKind } from '../options.js';
import type { Throughput } from '../sql/leased-throughput.js';
import type { Bounded, OverviewCounts, OverviewQueue } from '../sql/overview-queue-counts.js';
import type { DoneTotal } from '../sql/overview-table-facts.js';
import { sparkline, throughputChart } from './chart.js';
import { formatCount, formatDuration, formatTime } from './format.js';
import { h, type Html } from './html.js';
import { layout } from './layout.js';
import type { PageContext } from './page-context.js';

/** One table's figures on the overview. */
export interface TableOverview {
  readonly kind: TableKind;
  readonly counts: OverviewCounts;
  readonly done: DoneTotal;
  readonly throughput: readonly Throughput[];
}

/** What the overview shows. */
export interface OverviewData {
  readonly tables: readonly TableOverview[];
  readonly at: Date;
  /** The configured interval, or longer when counting took long. */
  readonly refreshIntervalMs: number;
  /** How long counting took, in ms, when that stretched the interval; null otherwise. */
  readonly slowMs: number | null;
}

const TITLES: Readonly<Record<TableKind, { heading: string; column: string; path: string }>> = {
  task: { heading: 'Tasks', column: 'Task name', path: '/tasks' },
  outbox: { heading: 'Outbox', column: 'Event type', path: '/outbox' },
};

/**
 * The overview: per task name and per event type, what died, what waits and for how long, what
 * runs, and an hour of throughput. Dead comes first: it is what needs a person, and on a narrow
 * screen the first columns are what shows. The `#live` block reloads itself (htmx polling) and is
 * morphed in place (idiomorph), so a focused link and a table scrolled sideways stay as they are.
 */
export function overviewPage(ctx: PageContext, data: OverviewData): Html {
  const every = `every ${Math.round(data.refreshIntervalMs / 100) / 10}s`;
  return layout(ctx, 'overview', 'Overview', h`<h1>Overview</h1>
<div id="live" hx-get="${ctx.base}/" hx-trigger="${every}" hx-select="#live" hx-ext="morph" hx-swap="morph">
<p class="muted">Updated <time datetime="${data.at.toISOString()}" id="updated-at">${formatTime(data.at)}</time>, refreshes ${every}${data.slowMs === null ? '' : ` (counting took ${formatDuration(data.slowMs)})`}.</p>
${data.tables.length === 0 ? h`<p class="notice">This schema has no leasehold tables: run <code>leasehold migrate</code>.</p>` : ''}
${data.tables.map((t) => tableSection(ctx, t))}
</div>`);
}

function tableSection(ctx: PageContext, t: TableOverview): Html {
  const title = TITLES[t.kind];
  const byName = new Map(t.throughput.map((x) => [x.name, x]));
  const total = new Array<number>(60).fill(0);
  for (const x of t.throughput) x.perMinute.forEach((n, i) => (total[i] = (total[i] ?? 0) + n));
  const queues = new Map(t.counts.queues.map((q) => [q.name, q]));
  const names = [...new Set([...queues.keys(), ...byName.keys()])].sort();
  const waits = t.kind === 'task';
  const columns = waits ? 10 : 9;
  return h`<section aria-labelledby="h-${t.kind}">
<h2 id="h-${t.kind}">${title.heading}</h2>
${throughputChart(`chart-${t.kind}`, 'Finished per minute, last hour', total)}
<p class="done-total">${doneTotal(t.done)}</p>
<div class="scroll" role="region" aria-labelledby="cap-${t.kind}" tabindex="0">
<table class="data">
<caption id="cap-${t.kind}">${title.heading} by ${title.column.toLowerCase()}</caption>
<thead><tr><th scope="col">${title.column}</th><th scope="col" class="num">Dead</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Oldest pending</th><th scope="col" class="num">Processing</th><th scope="col" class="num">Expired leases</th><th scope="col" class="num">Blocked</th>${waits ? h`<th scope="col" class="num">Waiting</th>` : ''}<th scope="col" class="num">Done, last hour</th><th scope="col">Trend</th></tr></thead>
<tbody>
${names.length === 0 ? h`<tr><td colspan="${columns}" class="muted">Nothing yet.</td></tr>` : ''}
${names.map((name) => queueRow(ctx, title.path, name, queues.get(name), byName.get(name), waits))}
</tbody>
</table>
</div>
${countingNote(t.counts)}
</section>`;
}

/** The done total: counted in a small table, else PostgreSQL's estimate, marked "≈" with its date. */
function doneTotal(done: DoneTotal): Html {
  if (done.kind === 'counted') return h`Done in all: <span class="count">${formatCount(done.n)}</span>`;
  if (done.kind === 'unknown') return h`Done in all: <span class="count" title="The table has not been analysed yet">unknown</span> (not yet analysed)`;
  const when = done.analysedAt === null ? 'its last vacuum' : h`<time datetime="${done.analysedAt.toISOString()}">${formatTime(done.analysedAt)}</time>`;
  return h`Done in all: <span class="count estimate" title="An estimate: PostgreSQL's statistics, not a count">≈ ${formatCount(done.n)}</span> (estimated from PostgreSQL's statistics of ${when}; not counted)`;
}

/** What the marks mean, shown only when a figure carries one. */
function countingNote(counts: OverviewCounts): Html {
  const marked = counts.queues.some((q) => q.oldestAtLeast || [q.dead, q.pending, q.blocked, q.processing, q.expiredLeases, q.waiting].some((b) => b?.atLeast === true));
  if (!marked && !counts.namesCut) return h``;
  return h`<p class="muted counting-note">${marked ? `Counting stops early so that the page costs the same on any table: "N+" means at least N (dead, pending and waiting are counted up to ${formatCount(counts.countCap)} per row; running and blocked rows are read up to ${formatCount(counts.readCap)} per table); "≥" marks an age that may be longer.` : ''}${counts.namesCut ? ' Only the first names (alphabetically) are listed.' : ''}</p>`;
}

/** A count, or "n+" (with a title saying so) when counting stopped there. */
function bounded(b: Bounded | null | undefined): Html {
  if (b == null) return h`0`;
  return b.atLeast ? h`<span class="at-least" title="At least ${formatCount(b.n)}: counting stopped here">${formatCount(b.n)}+</span>` : h`${formatCount(b.n)}`;
}

function oldest(q: OverviewQueue | undefined): Html {
  if (q?.oldestPendingAgeMs == null) return h`—`;
  const age = formatDuration(q.oldestPendingAgeMs);
  return q.oldestAtLeast ? h`<span class="at-least" title="At least this: an older row may not have been read">≥ ${age}</span>` : h`${age}`;
}

function queueRow(ctx: PageContext, path: string, name: string, q: OverviewQueue | undefined, tp: Throughput | undefined, waits: boolean): Html {
  const list = (status?: string) => `${ctx.base}${path}?${new URLSearchParams({ name, ...(status ? { status } : {}) })}`;
  const dead = q?.dead.n ?? 0;
  return h`<tr${dead > 0 ? h` class="has-dead"` : ''}>
<th scope="row"><a href="${list()}">${name}</a></th>
<td class="num">${dead > 0 ? h`<a class="dead" href="${list('dead')}">${bounded(q?.dead)}</a>` : '0'}</td>
<td class="num"><a href="${list('pending')}">${bounded(q?.pending)}</a></td>
<td class="num">${oldest(q)}</td>
<td class="num"><a href="${list('processing')}">${bounded(q?.processing)}</a></td>
<td class="num">${bounded(q?.expiredLeases)}</td>
<td class="num">${bounded(q?.blocked)}</td>
${waits ? h`<td class="num"><a href="${list('waiting')}">${bounded(q?.waiting)}</a></td>` : ''}
<td class="num">${formatCount(tp?.total ?? 0)}</td>
<td>${sparkline(tp?.perMinute ?? new Array<number>(60).fill(0))}</td>
</tr>`;
}
