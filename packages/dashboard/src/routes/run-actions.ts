import { getTask } from '@leasehold/core';
import type { Context } from 'hono';
import type { DashboardApp, DashboardEnv, RouteDeps } from '../env.js';
import { badRequest, one, parseRowId } from '../input.js';
import { applyRunAction, parseRunAction, signalPayload, type RunAction } from '../run/run-action.js';
import { messagePage } from '../views/layout.js';
import { runConfirmPage, runResultPage, signalRefusedPage } from '../views/run-confirm.js';

/**
 * Cancel, signal and fork a run, as the dead letters' retry / skip are done: POST
 * /tasks/:id/<action>/confirm shows what it will do and changes nothing; POST …/apply does it once
 * per idempotency key and redirects to GET /tasks/actions/:key, its outcome. CSRF, auth and
 * read-only are the middleware's, before any of these runs.
 */
export function runActionRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.post('/tasks/:id{[0-9]+}/:action{cancel|signal|fork}/confirm', (c) => confirm(c, deps));
  app.post('/tasks/:id{[0-9]+}/:action{cancel|signal|fork}/apply', (c) => apply(c, deps));
  app.get('/tasks/actions/:key', async (c) => {
    const page = c.get('page');
    const key = c.req.param('key');
    const outcome = deps.runOutcomes.isKey(key) ? deps.runOutcomes.get(key) : undefined;
    if (outcome === undefined) return c.html(messagePage(page, 'Not found', 'This outcome is no longer kept.', { href: `${page.base}/tasks`, label: 'Tasks' }), 404);
    return c.html(runResultPage(page, await outcome));
  });
}

interface Asked {
  readonly id: string;
  readonly action: RunAction;
  readonly body: Record<string, unknown>;
}

async function asked(c: Context<DashboardEnv>): Promise<Asked> {
  if (!c.get('page').tables.task) throw badRequest('This schema has no task table');
  const id = parseRowId(c.req.param('id') ?? '', 'id');
  const body = await c.req.parseBody({ all: true });
  return { id, action: parseRunAction(c.req.param('action') ?? '', body), body };
}

// bad JSON is the person's typing, not a broken form: show it back whole, with why, as a 400
function refusedPayload(c: Context<DashboardEnv>, a: Asked): Response | null {
  if (a.action.action !== 'signal') return null;
  const payload = signalPayload(a.action.payload);
  if (payload.ok) return null;
  return c.html(signalRefusedPage(c.get('page'), a.id, { name: a.action.name, payload: a.action.payload }, payload.why), 400);
}

async function confirm(c: Context<DashboardEnv>, deps: RouteDeps): Promise<Response> {
  const a = await asked(c);
  const refused = refusedPayload(c, a);
  if (refused !== null) return refused;
  const page = c.get('page');
  const info = await getTask(deps.settings.database, a.id, { schema: deps.settings.schema });
  if (info === null) return c.html(messagePage(page, 'Not found', `There is no task #${a.id} (it may have been purged).`, { href: `${page.base}/tasks`, label: 'Tasks' }), 404);
  return c.html(runConfirmPage(page, info, a.action, deps.runOutcomes.newKey()));
}

async function apply(c: Context<DashboardEnv>, deps: RouteDeps): Promise<Response> {
  const a = await asked(c);
  const refused = refusedPayload(c, a);
  if (refused !== null) return refused;
  const key = one(a.body.key);
  if (!deps.runOutcomes.isKey(key)) throw badRequest('Missing idempotency key: confirm from the confirmation page');
  const actor = await deps.settings.actor?.(c.req.raw);
  // a repeated key (double click, reload, retried request) gets the first outcome, never a second run
  await deps.runOutcomes.run(key, () => applyRunAction(deps.settings.database, deps.settings.schema, a.id, a.action, actor ? `, ${actor}` : ''));
  return c.redirect(`${c.get('page').base}/tasks/actions/${key}`, 303);
}
