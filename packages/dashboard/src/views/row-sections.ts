import type { GroupState } from '../sql/leased-group-state.js';
import type { TableKind } from '../options.js';
import { formatDuration, formatJson, formatTime } from './format.js';
import { h, type Html } from './html.js';
import { statusBadge } from './layout.js';
import { replaySection } from './replay-section.js';
import { runSections } from './run-sections.js';
import { isRun, type RunView } from '../run/run-view.js';

/** A row as the row page shows it: the stored columns, with what `redact` let through. */
export interface RowView {
  readonly kind: TableKind;
  readonly raw: Readonly<Record<string, unknown>>;
  /** Redacted payload, checkpoint (tasks) and headers (outbox). */
  readonly shown: { readonly payload: unknown; readonly checkpoint?: unknown; readonly headers?: unknown };
  readonly group: GroupState | null;
  /** Links of this table's pages, e.g. `/base/tasks`. */
  readonly path: string;
  /** A task's run as `getTask` reads it, with its events and grandchildren; null for outbox rows. */
  readonly run: RunView | null;
}

/**
 * The sections of the row page, in order. Each returns null when it has nothing to show. A
 * workflow run's timeline, children, events and signals come right after its error: on a run's
 * page they are what a person came for.
 */
export const ROW_SECTIONS: ReadonlyArray<(row: RowView) => Html | null> = [
  summarySection,
  leaseSection,
  replaySection,
  errorSection,
  runSection,
  groupSection,
  dataSection,
  traceSection,
];

function item(term: string, value: unknown): Html {
  return h`<div><dt>${term}</dt><dd>${value === null || value === undefined || value === '' ? h`<span class="muted">—</span>` : value}</dd></div>`;
}

function when(value: unknown): Html | null {
  return value instanceof Date ? h`<time datetime="${value.toISOString()}">${formatTime(value)}</time>` : null;
}

function summarySection(row: RowView): Html {
  const r = row.raw;
  const outbox = row.kind === 'outbox';
  return h`<section aria-labelledby="s-summary"><h2 id="s-summary">Summary</h2><dl class="facts">
${item('Status', statusBadge(String(r.status)))}
${item(outbox ? 'Event type' : 'Name', r[outbox ? 'event_type' : 'name'])}
${outbox ? item('Aggregate', `${String(r.aggregate_type)} ${String(r.aggregate_id)}`) : item('Dedup key', r.dedup_key)}
${item('Priority', r.priority)}
${item('Attempts', `${String(r.attempts)} of ${String(r.max_attempts)}`)}
${item('Created', when(r.created_at))}
${item('Due', when(r.available_at))}
${item('Finished', when(r.done_at))}
${item('Decision', r.resolution)}
${item('Decided at', when(r.resolved_at))}
</dl></section>`;
}

function leaseSection(row: RowView): Html {
  const r = row.raw;
  const until = r.lease_until instanceof Date ? r.lease_until : null;
  const now = r.db_now as Date;
  const left = until === null ? null : until.getTime() - now.getTime();
  const deadline = until === null ? null : h`${when(until)} <span class="muted">(${left! >= 0 ? `in ${formatDuration(left!)}` : `ran out ${formatDuration(left!)} ago`})</span>`;
  return h`<section aria-labelledby="s-lease"><h2 id="s-lease">Lease</h2><dl class="facts">
${item('Owner', r.lease_owner)}
${item('Deadline', r.status === 'processing' ? deadline : null)}
${item('Fencing token', r.lease_version)}
</dl></section>`;
}

function errorSection(row: RowView): Html | null {
  const error = row.raw.last_error;
  if (typeof error !== 'string' || error === '') return null;
  return h`<section aria-labelledby="s-error"><h2 id="s-error">Last error</h2><pre class="error-text">${error}</pre></section>`;
}

function groupSection(row: RowView): Html | null {
  const key = row.raw.group_key;
  if (typeof key !== 'string') return null;
  const id = String(row.raw.id);
  const g = row.group;
  const position = g === null ? 'The group has no unfinished row.'
    : g.headId === id ? (row.raw.status === 'dead' ? 'This row is the head, and dead: the rows behind it wait until it is retried or skipped.' : 'This row is the head: it runs next.')
    : row.raw.blocked === true ? `Waits behind the head, #${g.headId ?? '?'}.` : 'Finished.';
  return h`<section aria-labelledby="s-group"><h2 id="s-group">Ordering group</h2><dl class="facts">
${item('Group key', h`<a href="${row.path}/group?${new URLSearchParams({ key })}">${key}</a>`)}
${item('Head', g?.headId == null ? null : h`<a href="${row.path}/${g.headId}">#${g.headId}</a>`)}
${item('Waiting behind the head', g === null ? 0 : g.waiting > 10_000 ? '10,000+' : g.waiting)}
${item('This row', position)}
</dl></section>`;
}

function dataSection(row: RowView): Html {
  const s = row.shown;
  return h`<section aria-labelledby="s-payload"><h2 id="s-payload">Payload</h2><pre class="json">${formatJson(s.payload)}</pre></section>
${row.kind === 'task' ? h`<section aria-labelledby="s-checkpoint"><h2 id="s-checkpoint">Checkpoint</h2>${s.checkpoint == null ? h`<p class="muted">None stored.</p>` : h`<pre class="json">${formatJson(s.checkpoint)}</pre>`}</section>` : ''}
${row.kind === 'outbox' ? h`<section aria-labelledby="s-headers"><h2 id="s-headers">Headers</h2><pre class="json">${formatJson(s.headers)}</pre></section>` : ''}`;
}

// W3C traceparent: version-traceid-parentid-flags
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

function traceSection(row: RowView): Html {
  // tasks keep the producer's trace context in a column (where the schema has it), outbox
  // messages in their headers (shown as redact let them through)
  const headers = row.kind === 'outbox' ? (row.shown.headers as Record<string, unknown> | null) : null;
  const parent = row.kind === 'outbox' ? headers?.traceparent : row.raw.traceparent;
  const state = row.kind === 'outbox' ? headers?.tracestate : row.raw.tracestate;
  const ids = typeof parent === 'string' ? TRACEPARENT.exec(parent) : null;
  if (typeof parent !== 'string') {
    return h`<section aria-labelledby="s-trace"><h2 id="s-trace">Trace</h2>
<p class="muted">No trace context recorded (it is stored when the producer ran inside an OpenTelemetry span).</p></section>`;
  }
  return h`<section aria-labelledby="s-trace"><h2 id="s-trace">Trace</h2><dl class="facts">
${item('Trace id', ids === null ? null : h`<code>${ids[1]}</code>`)}
${item('Parent span id', ids === null ? null : h`<code>${ids[2]}</code>`)}
${item('traceparent', h`<code>${parent}</code>`)}
${typeof state === 'string' && state !== '' ? item('tracestate', h`<code>${state}</code>`) : ''}
</dl></section>`;
}

function runSection(row: RowView): Html | null {
  return row.run !== null && isRun(row.run) ? runSections(row.run) : null;
}
