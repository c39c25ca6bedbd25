import type { DashboardApp, RouteDeps } from '../env.js';
import { TABLE_KINDS } from '../options.js';
import { refreshInterval } from '../refresh-interval.js';
import { leasedThroughput } from '../sql/leased-throughput.js';
import { overviewQueueCounts } from '../sql/overview-queue-counts.js';
import { overviewTableFacts } from '../sql/overview-table-facts.js';
import { overviewPage, type TableOverview } from '../views/overview.js';

/**
 * GET / : per-queue figures of each table, and an hour of throughput; htmx reloads it, less often
 * when counting took long (see {@link refreshInterval}). Its statements read the unfinished rows'
 * indexes up to caps and the catalog, never the finished rows (core's `leaseQueueStats` reads every
 * unfinished row, 0.7 s beside 10,000,000 rows with 700,000 of them): see `overviewQueueCounts`.
 */
export function overviewRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/', async (c) => {
    const page = c.get('page');
    const db = deps.settings.database;
    const kinds = TABLE_KINDS.filter((k) => page.tables[k]);
    const started = performance.now();
    const tables: TableOverview[] = await Promise.all(
      kinds.map(async (kind) => {
        const table = deps.tables[kind];
        const [{ facts, counts }, throughput] = await Promise.all([
          overviewTableFacts(db, table).then(async (facts) => ({ facts, counts: await overviewQueueCounts(db, table, facts.byName) })),
          leasedThroughput(db, table, 60),
        ]);
        return { kind, counts, done: facts.done, throughput };
      }),
    );
    const tookMs = performance.now() - started;
    const refreshIntervalMs = refreshInterval(deps.settings.refreshIntervalMs, tookMs);
    const slowMs = refreshIntervalMs > deps.settings.refreshIntervalMs ? tookMs : null;
    return c.html(overviewPage(page, { tables, at: new Date(), refreshIntervalMs, slowMs }));
  });
}
