import { nonDeterminismDeadCounts, taskVersions } from '@leasehold/core';
import { errorCode } from '@leasehold/core/internal';
import type { DashboardApp, RouteDeps } from '../env.js';
import { versionsPage, type VersionsData } from '../views/versions.js';

// SQLSTATEs of a schema migrated before task versions (core migration 11): no task_worker
// table, no version column
const BEFORE_VERSIONS = new Set(['42P01', '42703']);

/**
 * GET /versions: workflow versions in flight, the ones no live worker accepts, and the runs that
 * failed replay. Read-only. Its reads follow the unfinished and dead rows; the overview does not
 * make them, so it costs what it did.
 */
export function versionRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/versions', async (c) => {
    const page = c.get('page');
    if (!page.tables.task) return c.notFound();
    const { database, schema } = deps.settings;
    let data: VersionsData | null;
    try {
      const [{ versions, workers }, nonDeterminismDead] = await Promise.all([
        taskVersions(database, { schema }),
        nonDeterminismDeadCounts(database, { schema }),
      ]);
      data = { versions, workers, nonDeterminismDead };
    } catch (error) {
      if (!BEFORE_VERSIONS.has(errorCode(error) ?? '')) throw error; // the driver's code, under core's DatabaseNotReadyError
      data = null;
    }
    return c.html(versionsPage(page, data));
  });
}
