import { leaseQueueStats } from '@leasehold/core';
import type { DashboardApp, RouteDeps } from '../env.js';
import { TABLE_KINDS } from '../options.js';
import { leasedThroughput } from '../sql/leased-throughput.js';
import { overviewPage, type TableOverview } from '../views/overview.js';

/** GET / : per-queue figures of each table, and an hour of throughput; htmx reloads it. */
export function overviewRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/', async (c) => {
    const page = c.get('page');
    const db = deps.settings.database;
    const kinds = TABLE_KINDS.filter((k) => page.tables[k]);
    const tables: TableOverview[] = await Promise.all(
      kinds.map(async (kind) => {
        const [queues, throughput] = await Promise.all([leaseQueueStats(db, deps.tables[kind]), leasedThroughput(db, deps.tables[kind], 60)]);
        return { kind, queues, throughput };
      }),
    );
    return c.html(overviewPage(page, { tables, at: new Date(), refreshIntervalMs: deps.settings.refreshIntervalMs }));
  });
}
