import type { DeadHead } from '../sql/leased-dead-heads.js';
import { formatTime } from './format.js';
import { h, type Html } from './html.js';
import type { PageContext } from './page-context.js';

/** The outbox page's first section: aggregates that wait for a person because their head is dead. */
export function blockedAggregates(ctx: PageContext, heads: readonly DeadHead[]): Html {
  const path = `${ctx.base}/outbox`;
  return h`<section aria-labelledby="h-blocked">
<h2 id="h-blocked">Blocked aggregates</h2>
${heads.length === 0 ? h`<p class="muted">None: no ordered aggregate waits behind a dead message.</p>` : h`
<div class="scroll" role="region" aria-labelledby="cap-blocked" tabindex="0"><table class="data rows">
<caption id="cap-blocked">Aggregates whose next message is dead, oldest first${heads.length === 20 ? ' (first 20)' : ''}</caption>
<thead><tr><th scope="col">Aggregate</th><th scope="col">Dead head</th><th scope="col">Event type</th><th scope="col" class="num">Waiting</th><th scope="col">Created</th><th scope="col">Why it died</th></tr></thead>
<tbody>${heads.map((d) => h`<tr>
<th scope="row"><a href="${path}/group?${new URLSearchParams({ key: d.groupKey })}">${d.groupKey}</a></th>
<td><a href="${path}/${d.id}">#${d.id}</a></td><td>${d.name}</td>
<td class="num">${d.waiting > 10_000 ? '10,000+' : d.waiting}</td>
<td><time datetime="${d.createdAt.toISOString()}">${formatTime(d.createdAt)}</time></td>
<td class="error">${d.lastError ?? ''}</td></tr>`)}</tbody></table></div>`}
</section>
<h2>Messages</h2>`;
}
