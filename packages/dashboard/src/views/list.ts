import { TASK_STATUSES } from '@leasehold/core';
import type { TableKind } from '../options.js';
import type { ListPage, ListRow } from '../sql/leased-list-page.js';
import { formatCount, formatTime } from './format.js';
import { h, type Html } from './html.js';
import { layout, statusBadge } from './layout.js';
import type { PageContext } from './page-context.js';

/** The list's filters as typed into its form (echoed back into it). */
export interface ListQuery {
  readonly status: string;
  readonly name: string;
  readonly group: string;
  readonly from: string;
  readonly to: string;
  /** Tasks only: the children of this run ('' for any). */
  readonly parent: string;
}

/** What the list page shows. */
export interface ListData {
  readonly kind: TableKind;
  readonly query: ListQuery;
  readonly page: ListPage | null;
  /** Whether this is the first page (no `below` given). */
  readonly first: boolean;
  /** Ordering groups blocked by a dead head (the outbox page lists them above its rows). */
  readonly extra?: Html;
}

const LABELS: Readonly<Record<TableKind, { title: string; name: string }>> = {
  task: { title: 'Tasks', name: 'Task name' },
  outbox: { title: 'Outbox messages', name: 'Event type' },
};

/** A leased table's rows, newest first, filtered by status, name, group key and creation time. */
export function listPage(ctx: PageContext, data: ListData): Html {
  const label = LABELS[data.kind];
  const path = `${ctx.base}/${data.kind === 'task' ? 'tasks' : 'outbox'}`;
  return layout(ctx, data.kind === 'task' ? 'tasks' : 'outbox', label.title, h`<h1>${label.title}</h1>
${data.extra ?? ''}
${data.kind === 'task' ? findForm(path) : ''}
${filterForm(path, label.name, data.query, data.kind === 'task')}
${data.query.parent === '' ? '' : h`<p>The children of run <a href="${path}/${data.query.parent}">#${data.query.parent}</a>, newest first.</p>`}
${data.query.group === '' ? '' : h`<p class="muted">Finished rows of a group have no index, so this list looks for them a stretch of ids at a time; what waits or runs in <a href="${path}/group?${new URLSearchParams({ key: data.query.group })}">group ${data.query.group}</a>, in the order it will run, is on its page.</p>`}
${data.page === null ? h`<p class="notice">No rows yet.</p>` : results(ctx, path, data)}`);
}

// an id goes straight to its page; the route answers a bad or unknown id with a clear message
function findForm(path: string): Html {
  return h`<form class="filters find" method="get" action="${path}/find" role="search" aria-label="Go to a task by id">
<div><label for="f-id">Task id</label><input id="f-id" name="id" inputmode="numeric" autocomplete="off" placeholder="e.g. 1042"></div>
<div class="actions"><button type="submit">Open</button></div>
</form>`;
}

function filterForm(path: string, nameLabel: string, q: ListQuery, tasks: boolean): Html {
  const options = ['', ...TASK_STATUSES].map((s) => h`<option value="${s}"${s === q.status ? h` selected` : ''}>${s === '' ? 'any' : s}</option>`);
  return h`<form class="filters" method="get" action="${path}" role="search" aria-label="Filter rows">
<div><label for="f-status">Status</label><select id="f-status" name="status">${options}</select></div>
<div><label for="f-name">${nameLabel}</label><input id="f-name" name="name" value="${q.name}" autocomplete="off"></div>
<div><label for="f-group">Group key</label><input id="f-group" name="group" value="${q.group}" autocomplete="off"></div>
${tasks ? h`<div><label for="f-parent">Children of (run id)</label><input id="f-parent" name="parent" value="${q.parent}" inputmode="numeric" autocomplete="off"></div>` : ''}
<div><label for="f-from">Created from (UTC)</label><input id="f-from" name="from" type="datetime-local" step="1" value="${q.from}"></div>
<div><label for="f-to">Created before (UTC)</label><input id="f-to" name="to" type="datetime-local" step="1" value="${q.to}"></div>
<div class="actions"><button type="submit">Filter</button> <a href="${path}">Clear</a></div>
</form>`;
}

function results(ctx: PageContext, path: string, data: ListData): Html {
  const page = data.page!;
  const filters = Object.fromEntries(Object.entries(data.query).filter(([, v]) => v !== ''));
  const older = page.next === null ? null : `${path}?${new URLSearchParams({ ...filters, below: page.next })}`;
  const first = `${path}?${new URLSearchParams(filters)}`;
  const partial = page.next !== null && page.rows.length < ctx.pageSize;
  return h`<div class="scroll" role="region" aria-label="Rows" tabindex="0">
<table class="data rows">
<caption>${formatCount(page.rows.length)} row(s), newest first${partial ? h` — searched ids ${page.scannedFrom} and up; older rows may match` : ''}</caption>
<thead><tr><th scope="col">Id</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Group</th><th scope="col">Created</th><th scope="col">Last error</th></tr></thead>
<tbody>
${page.rows.length === 0 ? h`<tr><td colspan="7" class="muted">No matching rows in this stretch of ids.</td></tr>` : ''}
${page.rows.map((r) => listRow(path, r))}
</tbody>
</table>
</div>
<nav class="pager" aria-label="Pages">
${data.first ? '' : h`<a href="${first}">« Newest</a>`}
${older === null ? h`<span class="muted">End of the list.</span>` : h`<a href="${older}" rel="next">${partial ? 'Search older »' : 'Older »'}</a>`}
</nav>`;
}

/** One row of a list table (also used by the group page). */
export function listRow(path: string, r: ListRow): Html {
  return h`<tr>
<td><a href="${path}/${r.id}">${r.id}</a></td>
<td>${r.name}</td>
<td>${statusBadge(r.status)}${r.blocked ? h` <span class="muted">(blocked)</span>` : ''}</td>
<td class="num">${r.attempts}/${r.maxAttempts}</td>
<td>${r.groupKey === null ? '' : h`<a href="${path}/group?${new URLSearchParams({ key: r.groupKey })}">${r.groupKey}</a>`}</td>
<td><time datetime="${r.createdAt.toISOString()}">${formatTime(r.createdAt)}</time></td>
<td class="error">${r.lastError ?? ''}</td>
</tr>`;
}
