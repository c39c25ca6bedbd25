import { leaseQueueStats } from '@leasehold/core';
import type { DashboardApp, RouteDeps } from '../env.js';
import { TABLE_KINDS } from '../options.js';
import { refreshInterval } from '../refresh-interval.js';
import { leasedThroughput } from '../sql/leased-throughput.js';
import { overviewPage, type TableOverview } from '../views/overview.js';

/**
 * GET / : per-queue figures of each table, and an hour of throughput; htmx reloads it, less often
 * when counting took long (see {@link refreshInterval}).
 */
export function overviewRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/', async (c) => {
    const page = c.get('page');
    const db = deps.settings.database;
    const kinds = TABLE_KINDS.filter((k) => page.tables[k]);
    const started = performance.now();
    const tables: TableOverview[] = await Promise.all(
      kinds.map(async (kind) => {
        const [queues, throughput] = await Promise.all([leaseQueueStats(db, deps.tables[kind]), leasedThroughput(db, deps.tables[kind], 60)]);
        return { kind, queues, throughput };
      }),
    );
    const tookMs = performance.now() - started;
    const refreshIntervalMs = refreshInterval(deps.settings.refreshIntervalMs, tookMs);
    const slowMs = refreshIntervalMs > deps.settings.refreshIntervalMs ? tookMs : null;
    return c.html(overviewPage(page, { tables, at: new Date(), refreshIntervalMs, slowMs }));
  });
}
