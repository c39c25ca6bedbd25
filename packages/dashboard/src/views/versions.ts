import type { LiveWorker, NonDeterminismDeadRow, TaskVersionRow } from '@leasehold/core';
import { formatCount, formatDuration, formatTime } from './format.js';
import { h, type Html } from './html.js';
import { layout } from './layout.js';
import type { PageContext } from './page-context.js';

/** What the versions page shows; null fields on a schema migrated before core migration 11. */
export interface VersionsData {
  readonly versions: readonly TaskVersionRow[];
  readonly workers: readonly LiveWorker[];
  readonly nonDeterminismDead: readonly NonDeterminismDeadRow[];
}

/**
 * Workflow versions in flight (issue 31): unfinished runs per task version, the versions no live
 * worker accepts (they wait for a worker that does), the dead runs that failed replay, and the
 * live workers with what they accept. `data` is null on a schema without versions yet.
 */
export function versionsPage(ctx: PageContext, data: VersionsData | null): Html {
  return layout(ctx, 'versions', 'Versions', h`<h1>Workflow versions</h1>
${data === null ? h`<p class="notice">This schema has no task versions yet: it was migrated before core migration 11.
<code>leasehold migrate</code> adds them.</p>` : h`${alerts(ctx, data)}${versionTable(ctx, data)}${workerTable(data.workers)}`}
<p class="muted">A run keeps the version it started with (<code>defineTask(name, { version })</code>); a worker claims only the versions its
definition accepts (<code>version</code> and <code>accepts</code>). A version no live worker accepts waits until one that does starts.
A run that failed replay (<code>NonDeterminismError</code>) keeps its recorded steps: deploy code that can run it, then retry it from its page or
<code>leasehold dead retry</code>. <code>leasehold patches</code> says how many runs still need a patch's old branch.</p>`);
}

function alerts(ctx: PageContext, data: VersionsData): Html | string {
  const stuck = data.versions.filter((v) => v.acceptedBy === 0);
  const failed = data.nonDeterminismDead.reduce((n, d) => n + d.dead, 0);
  if (stuck.length === 0 && failed === 0) return '';
  return h`<section aria-labelledby="s-attention" class="callout"><h2 id="s-attention">Needs attention</h2><ul>
${stuck.map((v) => {
  const runs = v.pending + v.processing + v.waiting;
  const wait = `${formatCount(runs)} ${runs === 1 ? 'run waits' : 'runs wait'}`;
  // no worker has the name at all: a worker to deploy (or a spelling to fix), not a version
  if (v.servedBy === 0) return h`<li><strong>${v.name}</strong>: no live worker runs this task; ${wait} for a worker with it among its tasks (not deployed, or the name misspelt?).</li>`;
  return h`<li><strong>${v.name}</strong> version ${v.version}: no live worker accepts this version; ${wait} for one that does.</li>`;
})}
${failed > 0 ? h`<li>${formatCount(failed)} dead run${failed === 1 ? '' : 's'} failed replay: their code no longer matches what they recorded. <a href="${ctx.base}/dead">Dead letters</a></li>` : ''}
</ul></section>`;
}

/** One line of the table: a task version with unfinished runs, dead runs that failed replay, or both. */
interface VersionLine {
  readonly name: string;
  readonly version: number;
  /** Its unfinished runs; null when only dead ones are left. */
  readonly open: TaskVersionRow | null;
  readonly failed: number;
}

function versionLines(data: VersionsData): VersionLine[] {
  const lines = new Map<string, { name: string; version: number; open: TaskVersionRow | null; failed: number }>();
  const at = (name: string, version: number) => {
    const key = JSON.stringify([name, version]);
    let line = lines.get(key);
    if (line === undefined) lines.set(key, (line = { name, version, open: null, failed: 0 }));
    return line;
  };
  for (const v of data.versions) at(v.name, v.version).open = v;
  for (const d of data.nonDeterminismDead) at(d.name, d.version).failed = d.dead;
  return [...lines.values()].sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version);
}

function versionTable(ctx: PageContext, data: VersionsData): Html {
  const live = data.workers.length > 0;
  const lines = versionLines(data);
  const list = (params: Record<string, string>) => `${ctx.base}/tasks?${new URLSearchParams(params)}`;
  const accepting = (open: TaskVersionRow | null): Html | string => {
    if (open === null) return '—';
    if (open.acceptedBy === null) return h`<span class="muted">unknown</span>`;
    if (open.servedBy === 0) return h`<span class="status status-dead">no live worker runs this task</span>`;
    return open.acceptedBy === 0 ? h`<span class="status status-dead">no live worker accepts this version</span>` : formatCount(open.acceptedBy);
  };
  return h`<div class="scroll" role="region" aria-labelledby="cap-versions" tabindex="0"><table class="data">
<caption id="cap-versions">Unfinished runs by task name and version</caption>
<thead><tr><th scope="col">Task name</th><th scope="col" class="num">Version</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Processing</th>
<th scope="col" class="num">Waiting</th><th scope="col" class="num">Oldest</th><th scope="col" class="num">Failed replay</th><th scope="col">Live workers accepting</th></tr></thead>
<tbody>
${lines.length === 0 ? h`<tr><td colspan="8" class="muted">No unfinished run.</td></tr>` : ''}
${lines.map(({ name, version, open, failed }) => h`<tr${open?.acceptedBy === 0 ? h` class="has-dead"` : ''}>
<th scope="row"><a href="${list({ name })}">${name}</a></th><td class="num">${version}</td>
<td class="num">${formatCount(open?.pending ?? 0)}</td><td class="num">${formatCount(open?.processing ?? 0)}</td><td class="num">${formatCount(open?.waiting ?? 0)}</td>
<td class="num">${open === null ? '—' : formatDuration(open.oldestAgeMs)}</td>
<td class="num">${failed > 0 ? h`<a class="dead" href="${list({ name, status: 'dead' })}">${formatCount(failed)}</a>` : '0'}</td>
<td>${accepting(open)}</td>
</tr>`)}
</tbody></table></div>
${live ? '' : h`<p class="notice">No live worker reports the versions it accepts (workers from before core migration 11 do not), so which runs can be claimed is unknown.</p>`}`;
}

function workerTable(workers: readonly LiveWorker[]): Html {
  return h`<h2 id="h-workers">Live workers</h2>
${workers.length === 0 ? h`<p class="muted">None reported in the last two minutes.</p>` : h`<div class="scroll" role="region" aria-labelledby="cap-workers" tabindex="0"><table class="data">
<caption id="cap-workers">Workers that reported in the last two minutes, with the versions they accept</caption>
<thead><tr><th scope="col">Owner</th><th scope="col">Accepts</th><th scope="col">Started</th><th scope="col">Last seen</th></tr></thead>
<tbody>${workers.map((w) => h`<tr><th scope="row">${w.owner}</th>
<td>${Object.entries(w.accepts).sort(([a], [b]) => a.localeCompare(b)).map(([name, versions], i) => h`${i > 0 ? '; ' : ''}${name} ${versions.join(', ')}`)}</td>
<td>${formatTime(w.startedAt)}</td><td>${formatTime(w.seenAt)}</td></tr>`)}</tbody></table></div>`}`;
}
