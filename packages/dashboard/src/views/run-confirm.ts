import type { TaskInfo } from '@leasehold/core';
import type { RunAction, RunOutcome } from '../run/run-action.js';
import { h, type Html } from './html.js';
import { layout, statusBadge } from './layout.js';
import type { PageContext } from './page-context.js';
import { signalForm } from './run-actions.js';

const OPEN: ReadonlySet<string> = new Set(['pending', 'processing', 'waiting']);

function title(a: RunAction, id: string): string {
  if (a.action === 'cancel') return `Cancel run #${id}?`;
  if (a.action === 'signal') return `Send signal "${a.name}" to run #${id}?`;
  return `Fork run #${id} from "${a.fromStep}"?`;
}

function effect(a: RunAction, info: TaskInfo): Html {
  if (a.action === 'cancel') {
    const children = info.children.filter((c) => OPEN.has(c.status)).length;
    return h`<p>It becomes cancelled${children > 0 ? h`, with its ${children} unfinished child${children === 1 ? '' : 'ren'} (and theirs)` : ''}; a running handler is told within a heartbeat, and its later writes are refused.</p>
<p>Reason, kept on the run: <q class="reason">${a.reason}</q></p>`;
  }
  if (a.action === 'signal') {
    return h`<p>Its next wait for "${a.name}" (or the one it is parked in) takes this payload; a signal sent before the run waits is kept for it.</p>
<pre class="json">${a.payload.trim() === '' ? '(no payload)' : a.payload}</pre>`;
  }
  return h`<p>A new run of ${info.name} starts, keeping what this run recorded before "${a.fromStep}" and running it and every later call again. This run is not changed; signals are not carried over.</p>`;
}

/** What an action on a run will do, and to which run, with one Confirm button; changes nothing. */
export function runConfirmPage(ctx: PageContext, info: TaskInfo, a: RunAction, key: string): Html {
  const t = title(a, info.id);
  const run = `${ctx.base}/tasks/${info.id}`;
  return layout(ctx, 'tasks', t, h`<h1>${t}</h1>
<p><a href="${run}">#${info.id}</a> ${info.name} ${statusBadge(info.status)}</p>
${effect(a, info)}
<form method="post" action="${run}/${a.action}/apply" class="confirm">
<input type="hidden" name="_csrf" value="${ctx.csrf}">
<input type="hidden" name="key" value="${key}">
${a.action === 'cancel' ? h`<input type="hidden" name="reason" value="${a.reason}">` : ''}
${a.action === 'signal' ? h`<input type="hidden" name="name" value="${a.name}"><input type="hidden" name="payload" value="${a.payload}">` : ''}
${a.action === 'fork' ? h`<input type="hidden" name="fromStep" value="${a.fromStep}">` : ''}
<button type="submit" autofocus>Confirm: ${a.action === 'cancel' ? 'cancel the run' : a.action === 'signal' ? 'send the signal' : 'fork the run'}</button>
<a href="${run}">Back to the run</a>
</form>`);
}

/** A signal whose payload is not JSON: the form again, as typed, with why (HTTP 400). */
export function signalRefusedPage(ctx: PageContext, id: string, typed: { name: string; payload: string }, why: string): Html {
  return layout(ctx, 'tasks', 'Cannot send that signal', h`<h1>Cannot send that signal</h1>
<p class="notice" role="alert">${why}. Nothing was sent; correct it below.</p>
${signalForm(ctx, id, typed, why)}
<p><a href="${ctx.base}/tasks/${id}">Back to the run</a></p>`);
}

const DONE = { cancel: 'Cancelled', signal: 'Signal sent', fork: 'Forked' } as const;

/** What a confirmed action did, linking to the run (and to the fork). */
export function runResultPage(ctx: PageContext, o: RunOutcome): Html {
  const path = `${ctx.base}/tasks`;
  const t = o.ok ? DONE[o.action] : 'Nothing changed';
  const link = (id: string) => h`<a href="${path}/${id}">#${id}</a>`;
  const said = o.action === 'cancel'
    ? h`Cancelled ${o.cancelled.map((id, i) => h`${i > 0 ? ', ' : ''}${link(id)}`)}.`
    : o.action === 'signal' ? h`The signal is stored for run ${link(o.taskId)} (it was ${o.status ?? '?'}).`
    : h`The new run is ${link(o.forkId ?? '')}, forked from ${link(o.taskId)}.`;
  return layout(ctx, 'tasks', t, h`<h1>${t}</h1>
${o.ok ? h`<p role="status" class="ok">${said}</p>` : h`<div role="alert" class="notice"><p>${o.refused}</p></div>`}
<p><a href="${path}/${o.taskId}">Back to run #${o.taskId}</a>${o.forkId === null ? '' : h` · <a href="${path}/${o.forkId}">Open the fork #${o.forkId}</a>`}</p>`);
}
