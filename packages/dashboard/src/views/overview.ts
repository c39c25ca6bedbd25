import type { QueueStats } from '@leasehold/core';
import type { TableKind } from '../options.js';
import type { Throughput } from '../sql/leased-throughput.js';
import { sparkline, throughputChart } from './chart.js';
import { formatCount, formatDuration, formatTime } from './format.js';
import { h, type Html } from './html.js';
import { layout } from './layout.js';
import type { PageContext } from './page-context.js';

/** One table's figures on the overview. */
export interface TableOverview {
  readonly kind: TableKind;
  readonly queues: readonly QueueStats[];
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
<p class="muted">Updated <time datetime="${data.at.toISOString()}" id="updated-at">${formatTime(data.at)}</time>, refreshes ${every}${data.slowMs === null ? '' : ` (counting took ${formatDuration(data.slowMs)}; purging done rows makes it quicker)`}.</p>
${data.tables.length === 0 ? h`<p class="notice">This schema has no leasehold tables: run <code>leasehold migrate</code>.</p>` : ''}
${data.tables.map((t) => tableSection(ctx, t))}
</div>`);
}

function tableSection(ctx: PageContext, t: TableOverview): Html {
  const title = TITLES[t.kind];
  const byName = new Map(t.throughput.map((x) => [x.name, x]));
  const total = new Array<number>(60).fill(0);
  for (const x of t.throughput) x.perMinute.forEach((n, i) => (total[i] = (total[i] ?? 0) + n));
  const names = [...new Set([...t.queues.map((q) => q.name), ...byName.keys()])].sort();
  const queues = new Map(t.queues.map((q) => [q.name, q]));
  return h`<section aria-labelledby="h-${t.kind}">
<h2 id="h-${t.kind}">${title.heading}</h2>
${throughputChart(`chart-${t.kind}`, 'Finished per minute, last hour', total)}
<div class="scroll" role="region" aria-labelledby="cap-${t.kind}" tabindex="0">
<table class="data">
<caption id="cap-${t.kind}">${title.heading} by ${title.column.toLowerCase()}</caption>
<thead><tr><th scope="col">${title.column}</th><th scope="col" class="num">Dead</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Oldest pending</th><th scope="col" class="num">Processing</th><th scope="col" class="num">Expired leases</th><th scope="col" class="num">Blocked</th><th scope="col" class="num">Done, last hour</th><th scope="col">Trend</th></tr></thead>
<tbody>
${names.length === 0 ? h`<tr><td colspan="9" class="muted">Nothing yet.</td></tr>` : ''}
${names.map((name) => queueRow(ctx, title.path, name, queues.get(name), byName.get(name)))}
</tbody>
</table>
</div>
</section>`;
}

function queueRow(ctx: PageContext, path: string, name: string, q: QueueStats | undefined, tp: Throughput | undefined): Html {
  const list = (status?: string) => `${ctx.base}${path}?${new URLSearchParams({ name, ...(status ? { status } : {}) })}`;
  const dead = q?.dead ?? 0;
  return h`<tr${dead > 0 ? h` class="has-dead"` : ''}>
<th scope="row"><a href="${list()}">${name}</a></th>
<td class="num">${dead > 0 ? h`<a class="dead" href="${list('dead')}">${formatCount(dead)}</a>` : '0'}</td>
<td class="num"><a href="${list('pending')}">${formatCount(q?.pending ?? 0)}</a></td>
<td class="num">${q?.oldestPendingAgeMs == null ? '—' : formatDuration(q.oldestPendingAgeMs)}</td>
<td class="num"><a href="${list('processing')}">${formatCount(q?.processing ?? 0)}</a></td>
<td class="num">${formatCount(q?.expiredLeases ?? 0)}</td>
<td class="num">${formatCount(q?.blocked ?? 0)}</td>
<td class="num">${formatCount(tp?.total ?? 0)}</td>
<td>${sparkline(tp?.perMinute ?? new Array<number>(60).fill(0))}</td>
</tr>`;
}
