import { limitList } from '@leasehold/core';
import type { DashboardApp, RouteDeps } from '../env.js';
import { limitsPage } from '../views/limits.js';

/** GET /limits: the task table's limits, read-only (they change in code, at a worker's start). */
export function limitRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/limits', async (c) => {
    const page = c.get('page');
    if (!page.tables.task) return c.notFound();
    // a schema migrated before flow control (core migration 7) has no limits table: say so
    const rows = page.tables.limit ? await limitList(deps.settings.database, deps.settings.schema) : null;
    return c.html(limitsPage(page, rows, new Date()));
  });
}
