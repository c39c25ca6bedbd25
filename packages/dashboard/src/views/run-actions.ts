import type { TaskInfo } from '@leasehold/core';
import { h, type Html } from './html.js';
import type { PageContext } from './page-context.js';

const UNFINISHED: ReadonlySet<string> = new Set(['pending', 'processing', 'waiting', 'dead']);

/** The recorded calls a run can be forked from: those with a place in its calls (not patch markers or events). */
export function forkPoints(info: Pick<TaskInfo, 'steps'>): string[] {
  return info.steps.filter((s) => s.position !== null && s.kind !== 'patch' && s.kind !== 'event').map((s) => s.name);
}

/**
 * Cancel, send a signal and fork, on a run's page: each form posts to a confirmation page that
 * changes nothing yet. Retry of a dead run is the dead letters' form, above. Null when read-only.
 */
export function runActions(ctx: PageContext, info: TaskInfo): Html | null {
  if (ctx.readOnly) return null;
  const points = forkPoints(info);
  const open = UNFINISHED.has(info.status);
  return h`<section aria-labelledby="s-actions"><h2 id="s-actions">Actions</h2>
<div class="run-actions">
${open ? cancelForm(ctx, info.id) : ''}
${open ? signalForm(ctx, info.id, { name: '', payload: '' }) : ''}
${points.length > 0 ? forkForm(ctx, info.id, points) : ''}
${!open && points.length === 0 ? h`<p class="muted">This run has ended and recorded no step to fork from.</p>` : ''}
</div></section>`;
}

const target = (ctx: PageContext, id: string, action: string) => `${ctx.base}/tasks/${id}/${action}/confirm`;

function cancelForm(ctx: PageContext, id: string): Html {
  return h`<form class="run-action" method="post" action="${target(ctx, id, 'cancel')}" aria-labelledby="a-cancel">
<h3 id="a-cancel">Cancel</h3>
<input type="hidden" name="_csrf" value="${ctx.csrf}">
<p class="muted">The run and its unfinished children stop; a running handler is told within a heartbeat.</p>
<div><label for="cancel-reason">Reason (kept on the run)</label>
<input id="cancel-reason" name="reason" required maxlength="800" autocomplete="off" placeholder="e.g. customer withdrew the order"></div>
<div class="actions"><button type="submit">Cancel run…</button></div>
</form>`;
}

/** The signal form, empty on the run page, or as typed when the payload was refused. */
export function signalForm(ctx: PageContext, id: string, typed: { readonly name: string; readonly payload: string }, error?: string): Html {
  return h`<form class="run-action" method="post" action="${target(ctx, id, 'signal')}" aria-labelledby="a-signal">
<h3 id="a-signal">Send a signal</h3>
<input type="hidden" name="_csrf" value="${ctx.csrf}">
<div><label for="signal-name">Signal name</label>
<input id="signal-name" name="name" required maxlength="200" autocomplete="off" value="${typed.name}" placeholder="e.g. approved"></div>
<div><label for="signal-payload">Payload (JSON, optional)</label>
<textarea id="signal-payload" name="payload" rows="4" spellcheck="false"${error === undefined ? '' : h` aria-invalid="true" aria-describedby="signal-error"`}>${typed.payload}</textarea>
${error === undefined ? '' : h`<p id="signal-error" class="field-error">${error}</p>`}</div>
<div class="actions"><button type="submit">Send signal…</button></div>
</form>`;
}

function forkForm(ctx: PageContext, id: string, points: readonly string[]): Html {
  return h`<form class="run-action" method="post" action="${target(ctx, id, 'fork')}" aria-labelledby="a-fork">
<h3 id="a-fork">Fork from a step</h3>
<input type="hidden" name="_csrf" value="${ctx.csrf}">
<p class="muted">A new run keeps what this one recorded before the step and runs the rest; this run is not changed.</p>
<div><label for="fork-step">Run again from</label>
<select id="fork-step" name="fromStep">${points.map((p) => h`<option value="${p}">${p}</option>`)}</select></div>
<div class="actions"><button type="submit">Fork…</button></div>
</form>`;
}
