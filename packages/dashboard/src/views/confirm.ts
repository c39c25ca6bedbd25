import type { TableKind } from '../options.js';
import type { ListRow } from '../sql/leased-list-page.js';
import { h, type Html } from './html.js';
import { layout, statusBadge } from './layout.js';
import type { PageContext } from './page-context.js';

/** A retry or skip a person asked for, before it is applied. */
export interface PendingResolution {
  readonly kind: TableKind;
  readonly action: 'retry' | 'skip';
  readonly reason: string;
  /** The rows as they are now (ids that do not exist are left out). */
  readonly rows: readonly ListRow[];
  readonly ids: readonly string[];
  /** The idempotency key the confirm button posts. */
  readonly key: string;
}

const EFFECT = {
  retry: 'They go back to pending, due now, with their attempts reset to 0; the worker runs them again.',
  skip: 'They are marked done without running; the next row of an ordered group runs after them.',
};

/** "Retry 3 dead tasks?": what will happen, to which rows, with which reason; Confirm or Cancel. */
export function confirmPage(ctx: PageContext, p: PendingResolution): Html {
  const noun = p.kind === 'task' ? 'task' : 'outbox message';
  const verb = p.action === 'retry' ? 'Retry' : 'Skip';
  const path = `${ctx.base}/${p.kind === 'task' ? 'tasks' : 'outbox'}`;
  const title = `${verb} ${p.ids.length} dead ${noun}${p.ids.length === 1 ? '' : 's'}?`;
  return layout(ctx, 'dead', title, h`<h1>${title}</h1>
<p>${EFFECT[p.action]} Nothing changes unless every one of them is still dead when you confirm.</p>
<p>Reason, kept on each row: <q class="reason">${p.reason}</q></p>
<ul class="confirm-list">${p.rows.map((r) => h`<li><a href="${path}/${r.id}">#${r.id}</a> ${r.name} ${statusBadge(r.status)} <span class="error">${r.lastError ?? ''}</span></li>`)}</ul>
<form method="post" action="${ctx.base}/dead/apply" class="confirm">
<input type="hidden" name="_csrf" value="${ctx.csrf}">
<input type="hidden" name="table" value="${p.kind}">
<input type="hidden" name="action" value="${p.action}">
<input type="hidden" name="reason" value="${p.reason}">
<input type="hidden" name="key" value="${p.key}">
${p.ids.map((id) => h`<input type="hidden" name="ids" value="${id}">`)}
<button type="submit" autofocus>Confirm: ${verb.toLowerCase()} ${p.ids.length}</button>
<a href="${ctx.base}/dead">Cancel</a>
</form>`);
}

/** What a retry / skip did, as the result page shows it. */
export interface ResolutionOutcome {
  readonly kind: TableKind;
  readonly action: 'retry' | 'skip';
  readonly changed: readonly string[];
  /** Why nothing changed: ids not dead, or a conflict; empty when it worked. */
  readonly refused: readonly string[];
}

/** The outcome page a confirmed retry / skip redirects to. */
export function resultPage(ctx: PageContext, o: ResolutionOutcome): Html {
  const path = `${ctx.base}/${o.kind === 'task' ? 'tasks' : 'outbox'}`;
  const done = o.refused.length === 0;
  const verb = o.action === 'retry' ? 'Retried' : 'Skipped';
  return layout(ctx, 'dead', done ? `${verb} ${o.changed.length}` : 'Nothing changed', h`<h1>${done ? `${verb} ${o.changed.length}` : 'Nothing changed'}</h1>
${done
    ? h`<p role="status" class="ok">${verb}: ${o.changed.map((id, i) => h`${i > 0 ? ', ' : ''}<a href="${path}/${id}">#${id}</a>`)}.</p>`
    : h`<div role="alert" class="notice"><p>Nothing was ${verb.toLowerCase()}:</p><ul>${o.refused.map((why) => h`<li>${why}</li>`)}</ul></div>`}
<p><a href="${ctx.base}/dead">Back to the dead letters</a></p>`);
}
