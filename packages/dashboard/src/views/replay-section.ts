import { NON_DETERMINISM_ERROR_PREFIX } from '@leasehold/core';
import { h, type Html } from './html.js';
import type { RowView } from './row-sections.js';

/**
 * On the page of a task that failed replay (`NonDeterminismError`): what happened in words, the
 * error's first line (which names the run, the position, what was recorded and what the code
 * asked for), and what brings the run back. The whole error stays in the "Last error" section.
 */
export function replaySection(row: RowView): Html | null {
  const error = row.raw.last_error;
  if (row.kind !== 'task' || typeof error !== 'string' || !error.startsWith(NON_DETERMINISM_ERROR_PREFIX)) return null;
  const reason = error.slice(NON_DETERMINISM_ERROR_PREFIX.length).split('\n')[0];
  const dead = row.raw.status === 'dead';
  return h`<section aria-labelledby="s-replay"><h2 id="s-replay">Replay failed: the code changed under this run</h2>
<p>The workflow's code no longer matches the steps this run recorded, so it was stopped rather than continued on a wrong path:</p>
<pre class="error-text">${reason}</pre>
<p>Its recorded steps are kept. Deploy code that can run it — put back the step the code no longer asks for, or guard the change with
<code>ctx.patched(…)</code> or a new task version — then ${dead ? 'retry it' : 'it runs again'}: it resumes from its recorded steps.</p></section>`;
}
