import { scheduleList, scheduleSetPaused } from '@leasehold/core';
import type { Context } from 'hono';
import type { DashboardApp, DashboardEnv, RouteDeps } from '../env.js';
import { badRequest, one, parseName } from '../input.js';
import { schedulesPage } from '../views/schedules.js';

/** GET /schedules; POST /schedules/pause and /schedules/resume (core's scheduleSetPaused). */
export function scheduleRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/schedules', async (c) => {
    const page = c.get('page');
    if (!page.tables.schedule) return c.notFound();
    const rows = await scheduleList(deps.settings.database, deps.settings.schema);
    const changed = one(c.req.query('changed'));
    return c.html(schedulesPage(page, rows, changed === '' ? null : changed));
  });
  app.post('/schedules/pause', (c) => setPaused(c, deps, true));
  app.post('/schedules/resume', (c) => setPaused(c, deps, false));
}

async function setPaused(c: Context<DashboardEnv>, deps: RouteDeps, paused: boolean): Promise<Response> {
  const page = c.get('page');
  if (!page.tables.schedule) return c.notFound();
  const name = parseName(one((await c.req.parseBody()).name), 'name');
  if (name === null) throw badRequest('Which schedule?');
  // pausing a paused schedule (a repeated request) changes nothing: idempotent by its WHERE
  const changed = await scheduleSetPaused(deps.settings.database, deps.settings.schema, [name], paused);
  const verb = paused ? 'Paused' : 'Resumed';
  const message = changed.length > 0 ? `${verb} ${name}.` : `${name} was already ${paused ? 'paused' : 'running'} (or does not exist).`;
  return c.redirect(`${page.base}/schedules?${new URLSearchParams({ changed: message })}`, 303);
}
