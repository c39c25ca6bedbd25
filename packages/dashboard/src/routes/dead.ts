import { leaseDeadList } from '@leasehold/core';
import type { Context } from 'hono';
import type { DashboardApp, DashboardEnv, RouteDeps } from '../env.js';
import { badRequest, many, one, parseIds, parseReason, parseRowId, parseTableKind } from '../input.js';
import { TABLE_KINDS, type TableKind } from '../options.js';
import { resolveDead } from '../resolve-dead.js';
import { leasedRowsById } from '../sql/leased-rows-by-id.js';
import { confirmPage, resultPage } from '../views/confirm.js';
import { deadPage, type DeadSection } from '../views/dead.js';
import { messagePage } from '../views/layout.js';

/**
 * GET /dead lists dead rows; POST /dead/confirm shows what a retry / skip would do (changes
 * nothing); POST /dead/apply does it once per idempotency key and redirects to its outcome.
 */
export function deadRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/dead', (c) => list(c, deps));
  app.post('/dead/confirm', (c) => confirm(c, deps));
  app.post('/dead/apply', (c) => apply(c, deps));
  app.get('/dead/result/:key', async (c) => {
    const page = c.get('page');
    const key = c.req.param('key');
    const outcome = deps.outcomes.isKey(key) ? deps.outcomes.get(key) : undefined;
    if (outcome === undefined) return c.html(messagePage(page, 'Not found', 'This outcome is no longer kept.', { href: `${page.base}/dead`, label: 'Dead letters' }), 404);
    return c.html(resultPage(page, await outcome));
  });
}

async function list(c: Context<DashboardEnv>, deps: RouteDeps): Promise<Response> {
  const page = c.get('page');
  const only = one(c.req.query('table'));
  const after = one(c.req.query('after')) === '' ? null : parseRowId(one(c.req.query('after')), 'after');
  const kinds = TABLE_KINDS.filter((k) => page.tables[k]);
  const sections: DeadSection[] = await Promise.all(kinds.map(async (kind) => {
    const from = kind === only ? after : null;
    const rows = await leaseDeadList(deps.settings.database, deps.tables[kind], { limit: deps.settings.pageSize + 1, afterId: from });
    const shown = rows.slice(0, deps.settings.pageSize).map((r) => ({ ...r, name: String((r as unknown as Record<string, unknown>)[kind === 'task' ? 'name' : 'eventType']) }));
    return { kind, rows: shown, after: from, next: rows.length > deps.settings.pageSize ? shown.at(-1)!.id : null };
  }));
  return c.html(deadPage(page, sections));
}

interface Asked {
  readonly kind: TableKind;
  readonly action: 'retry' | 'skip';
  readonly ids: string[];
  readonly reason: string;
}

async function asked(c: Context<DashboardEnv>): Promise<Asked> {
  const body = await c.req.parseBody({ all: true });
  const kind = parseTableKind(one(body.table));
  if (!c.get('page').tables[kind]) throw badRequest(`This schema has no ${kind} table`);
  const action = one(body.action);
  if (action !== 'retry' && action !== 'skip') throw badRequest('Choose retry or skip');
  // the dead-letter page's form offers the ticked rows or every row it shows
  const ids = one(body.scope) === 'page' ? many(body.pageIds) : many(body.ids);
  return { kind, action, ids: parseIds(ids), reason: parseReason(one(body.reason)) };
}

async function confirm(c: Context<DashboardEnv>, deps: RouteDeps): Promise<Response> {
  const a = await asked(c);
  const rows = await leasedRowsById(deps.settings.database, deps.tables[a.kind], a.ids);
  return c.html(confirmPage(c.get('page'), { ...a, rows, key: deps.outcomes.newKey() }));
}

async function apply(c: Context<DashboardEnv>, deps: RouteDeps): Promise<Response> {
  const a = await asked(c);
  const key = one((await c.req.parseBody({ all: true })).key);
  if (!deps.outcomes.isKey(key)) throw badRequest('Missing idempotency key: confirm from the confirmation page');
  const actor = await deps.settings.actor?.(c.req.raw);
  const reason = `${a.reason} (via the leasehold dashboard${actor ? `, ${actor}` : ''})`;
  // a repeated key (double click, reload, retried request) gets the first outcome, never a second run
  await deps.outcomes.run(key, () => resolveDead(deps.settings.database, { ...a, table: deps.tables[a.kind], reason }));
  return c.redirect(`${c.get('page').base}/dead/result/${key}`, 303);
}
