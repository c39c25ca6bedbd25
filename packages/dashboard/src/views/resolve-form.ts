import type { TableKind } from '../options.js';
import { h, type Html } from './html.js';
import type { PageContext } from './page-context.js';

/** Which dead rows a retry / skip form acts on. */
export type ResolveTarget =
  /** These ids (a row page, a group's dead head). */
  | { readonly ids: readonly string[] }
  /** The boxes ticked in the surrounding table, or every row of the page (`pageIds`) when chosen. */
  | { readonly ticked: true; readonly pageIds: readonly string[] };

/**
 * The retry / skip form for dead rows: which rows, a required reason and one button per action.
 * It posts to the confirmation page, which changes nothing yet.
 */
export function resolveForm(ctx: PageContext, kind: TableKind, target: ResolveTarget, formId: string): Html | null {
  if (ctx.readOnly) return null;
  return h`<form id="${formId}" class="resolve" method="post" action="${ctx.base}/dead/confirm">
<input type="hidden" name="_csrf" value="${ctx.csrf}">
<input type="hidden" name="table" value="${kind}">
${'ids' in target ? target.ids.map((id) => h`<input type="hidden" name="ids" value="${id}">`) : scope(formId, target.pageIds)}
<div><label for="${formId}-reason">Reason (kept on the row)</label>
<input id="${formId}-reason" name="reason" required maxlength="2000" autocomplete="off" placeholder="e.g. fixed the SMTP credentials"></div>
<div class="actions">
<button type="submit" name="action" value="retry">Retry…</button>
<button type="submit" name="action" value="skip" class="secondary">Skip…</button>
</div>
</form>`;
}

// ticked rows, or all of the page's: no script needed, the page's ids travel with the form
function scope(formId: string, pageIds: readonly string[]): Html {
  return h`<fieldset class="scope"><legend>Rows</legend>
<label><input type="radio" name="scope" value="ticked" id="${formId}-ticked" checked> the ones ticked above</label>
<label><input type="radio" name="scope" value="page" id="${formId}-page"> ${pageIds.length === 1 ? 'the one on this page' : `all ${pageIds.length} on this page`}</label>
${pageIds.map((id) => h`<input type="hidden" name="pageIds" value="${id}">`)}
</fieldset>`;
}
