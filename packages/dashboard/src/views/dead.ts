import type { DeadRow } from '@leasehold/core';
import type { TableKind } from '../options.js';
import { formatTime } from './format.js';
import { h, type Html } from './html.js';
import { layout } from './layout.js';
import type { PageContext } from './page-context.js';
import { resolveForm } from './resolve-form.js';

/** One table's dead rows on the dead-letter page. */
export interface DeadSection {
  readonly kind: TableKind;
  readonly rows: ReadonlyArray<DeadRow<{ readonly name: string }>>;
  /** The `after` of the next page, or null. */
  readonly next: string | null;
  readonly after: string | null;
}

const NOUNS: Readonly<Record<TableKind, string>> = { task: 'Dead tasks', outbox: 'Dead outbox messages' };

/** Dead letters of each table, oldest first, with check boxes and the retry / skip form. */
export function deadPage(ctx: PageContext, sections: readonly DeadSection[]): Html {
  return layout(ctx, 'dead', 'Dead letters', h`<h1>Dead letters</h1>
<p class="muted">A dead row stays dead until a person decides: retry (it runs again, attempts reset) or skip (it is marked done without running). Either asks for a reason, kept on the row, and a confirmation.</p>
${sections.map((s) => deadSection(ctx, s))}`);
}

function deadSection(ctx: PageContext, s: DeadSection): Html {
  const formId = `resolve-${s.kind}`;
  const path = `${ctx.base}/${s.kind === 'task' ? 'tasks' : 'outbox'}`;
  const next = s.next === null ? null : `${ctx.base}/dead?${new URLSearchParams({ table: s.kind, after: s.next })}`;
  return h`<section aria-labelledby="h-dead-${s.kind}">
<h2 id="h-dead-${s.kind}">${NOUNS[s.kind]}</h2>
${s.rows.length === 0 ? h`<p class="muted">None${s.after === null ? '' : ' after this point'}.</p>` : h`
<div class="scroll" role="region" aria-labelledby="cap-dead-${s.kind}" tabindex="0">
<table class="data rows">
<caption id="cap-dead-${s.kind}">${NOUNS[s.kind]}, oldest first</caption>
<thead><tr>${ctx.readOnly ? '' : h`<th scope="col"><span class="sr-only">Select</span></th>`}<th scope="col">Id</th><th scope="col">Name</th><th scope="col" class="num">Attempts</th><th scope="col">Group</th><th scope="col">Created</th><th scope="col">Last error</th></tr></thead>
<tbody>${s.rows.map((r) => h`<tr>
${ctx.readOnly ? '' : h`<td><input type="checkbox" name="ids" value="${r.id}" form="${formId}" id="pick-${s.kind}-${r.id}" aria-label="Select ${s.kind} ${r.id}"></td>`}
<td><a href="${path}/${r.id}">${r.id}</a></td><td>${r.name}</td><td class="num">${r.attempts}/${r.maxAttempts}</td>
<td>${r.groupKey === null ? '' : h`<a href="${path}/group?${new URLSearchParams({ key: r.groupKey })}">${r.groupKey}</a> <span class="muted">(blocks its group)</span>`}</td>
<td><time datetime="${r.createdAt.toISOString()}">${formatTime(r.createdAt)}</time></td>
<td class="error">${(r.lastError ?? '').slice(0, 300)}</td></tr>`)}</tbody>
</table>
</div>
${resolveForm(ctx, s.kind, { ticked: true, pageIds: s.rows.map((r) => r.id) }, formId)}`}
${next === null ? '' : h`<nav class="pager" aria-label="Pages of ${NOUNS[s.kind].toLowerCase()}"><a href="${next}" rel="next">Next page »</a></nav>`}
</section>`;
}
