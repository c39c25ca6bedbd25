import type { TableKind } from '../options.js';
import type { GroupState } from '../sql/leased-group-state.js';
import type { ListRow } from '../sql/leased-list-page.js';
import { h, type Html } from './html.js';
import { layout } from './layout.js';
import type { PageContext } from './page-context.js';
import { resolveForm } from './resolve-form.js';
import { listRow } from './list.js';

/** One ordering group (an outbox aggregate): its head, the rows waiting, and why it is stuck. */
export interface GroupData {
  readonly kind: TableKind;
  readonly key: string;
  readonly state: GroupState | null;
  /** Head first, then waiting rows in the order they will run. */
  readonly rows: readonly ListRow[];
}

/** The group page: whether the group moves, and if a dead head blocks it, retry / skip right here. */
export function groupPage(ctx: PageContext, g: GroupData): Html {
  const path = `${ctx.base}/${g.kind === 'task' ? 'tasks' : 'outbox'}`;
  const head = g.rows.find((r) => r.id === g.state?.headId);
  const noun = g.kind === 'outbox' ? 'Aggregate' : 'Group';
  const all = `${path}?${new URLSearchParams({ group: g.key })}`;
  return layout(ctx, g.kind === 'task' ? 'tasks' : 'outbox', `${noun} ${g.key}`, h`<h1>${noun} <code>${g.key}</code></h1>
${verdict(ctx, path, g, head)}
${g.rows.length === 0 ? '' : h`<div class="scroll" role="region" aria-labelledby="cap-group" tabindex="0"><table class="data rows">
<caption id="cap-group">Unfinished rows, in the order they run${g.state !== null && g.state.waiting > g.rows.length - 1 ? ` (first ${g.rows.length} shown)` : ''}</caption>
<thead><tr><th scope="col">Id</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Group</th><th scope="col">Created</th><th scope="col">Last error</th></tr></thead>
<tbody>${g.rows.map((r) => listRow(path, r))}</tbody></table></div>`}
<p><a href="${all}">Every row of this ${noun.toLowerCase()}, finished ones too</a></p>`);
}

function verdict(ctx: PageContext, path: string, g: GroupData, head: ListRow | undefined): Html {
  if (g.state === null) return h`<p class="ok" role="status">Nothing waits: every row of it is finished (or it never had one).</p>`;
  const waiting = g.state.waiting > 10_000 ? '10,000+' : String(g.state.waiting);
  if (head?.status !== 'dead') {
    return h`<p role="status">Moving: its head <a href="${path}/${g.state.headId ?? ''}">#${g.state.headId ?? '?'}</a> is ${head?.status ?? 'unknown'}; ${waiting} row(s) wait behind it.</p>`;
  }
  return h`<section class="callout" aria-labelledby="s-blocked"><h2 id="s-blocked">Blocked by its dead head</h2>
<p>#${head.id} (${head.name}) died after ${head.attempts} attempt(s); ${waiting} row(s) wait behind it, in order, until a person retries or skips it.</p>
<pre class="error-text">${head.lastError ?? ''}</pre>
${resolveForm(ctx, g.kind, { ids: [head.id] }, 'resolve-head') ?? ''}
</section>`;
}
