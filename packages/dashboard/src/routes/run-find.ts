import { isRowId } from '@leasehold/core/internal';
import type { DashboardApp, RouteDeps } from '../env.js';
import { one } from '../input.js';
import { leasedRowGet } from '../sql/leased-row-get.js';
import { messagePage } from '../views/layout.js';

/**
 * GET /tasks/find?id=…: the list page's id box. A known id goes straight to its page (303); a
 * malformed one is a 400 and an unknown one a 404, each a page that says so and links back.
 */
export function runFindRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/tasks/find', async (c) => {
    const page = c.get('page');
    if (!page.tables.task) return c.notFound();
    const back = { href: `${page.base}/tasks`, label: 'Back to the tasks' };
    const id = one(c.req.query('id')).trim().replace(/^#/, '');
    const typed = id.slice(0, 100);
    if (!isRowId(id)) {
      return c.html(messagePage(page, 'Not a task id', `"${typed}" is not a task id: ids are whole numbers, such as 1042.`, back), 400);
    }
    const row = await leasedRowGet(deps.settings.database, deps.tables.task, id);
    if (row === null) return c.html(messagePage(page, 'Not found', `There is no task #${id} (it may have been purged).`, back), 404);
    return c.redirect(`${page.base}/tasks/${id}`, 303);
  });
}
