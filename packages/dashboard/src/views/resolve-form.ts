import type { TableKind } from '../options.js';
import { h, type Html } from './html.js';
import type { PageContext } from './page-context.js';

/**
 * The retry / skip form for dead rows: a required reason and one button per action. It posts to
 * the confirmation page, which changes nothing yet; `checkboxes` says the ids come from checked
 * boxes of the surrounding table instead of hidden fields.
 */
export function resolveForm(ctx: PageContext, kind: TableKind, ids: readonly string[] | 'checkboxes', formId: string): Html | null {
  if (ctx.readOnly) return null;
  const hidden = ids === 'checkboxes' ? '' : ids.map((id) => h`<input type="hidden" name="ids" value="${id}">`);
  return h`<form id="${formId}" class="resolve" method="post" action="${ctx.base}/dead/confirm">
<input type="hidden" name="_csrf" value="${ctx.csrf}">
<input type="hidden" name="table" value="${kind}">
${hidden}
<div><label for="${formId}-reason">Reason (kept on the row)</label>
<input id="${formId}-reason" name="reason" required maxlength="2000" autocomplete="off" placeholder="e.g. fixed the SMTP credentials"></div>
<div class="actions">
<button type="submit" name="action" value="retry">Retry…</button>
<button type="submit" name="action" value="skip" class="secondary">Skip…</button>
</div>
</form>`;
}
