import { h, type Html } from './html.js';
import { layout } from './layout.js';
import type { PageContext } from './page-context.js';
import { resolveForm } from './resolve-form.js';
import { runActions } from './run-actions.js';
import { ROW_SECTIONS, type RowView } from './row-sections.js';

/** One task or outbox message: every stored field, and retry / skip while it is dead. */
export function rowPage(ctx: PageContext, row: RowView): Html {
  const id = String(row.raw.id);
  const noun = row.kind === 'task' ? 'Task' : 'Outbox message';
  const dead = row.raw.status === 'dead';
  const actions = dead ? resolveForm(ctx, row.kind, { ids: [id] }, 'resolve-row') : null;
  return layout(ctx, row.kind === 'task' ? 'tasks' : 'outbox', `${noun} ${id}`, h`<h1>${noun} <span class="id">#${id}</span></h1>
${dead ? h`<section aria-labelledby="s-dead" class="callout"><h2 id="s-dead">This ${noun.toLowerCase()} is dead</h2>
<p>Nothing retries it by itself. Retry it once its cause is fixed (it runs again, attempts reset), or skip it (it is marked done without running${row.raw.group_key ? ', and the next row of its group runs' : ''}).</p>
${actions ?? h`<p class="muted">Read-only dashboard: use <code>leasehold dead retry|skip</code>.</p>`}</section>` : ''}
${ROW_SECTIONS.map((section) => section(row))}
${row.run === null ? '' : runActions(ctx, row.run.info)}`);
}
