import { toError } from '@leasehold/core/internal';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { leasedTables, type DashboardApp, type DashboardEnv } from './env.js';
import type { DashboardSettings } from './options.js';
import { assetRoutes } from './routes/assets.js';
import { deadRoutes } from './routes/dead.js';
import { limitRoutes } from './routes/limits.js';
import { listRoutes } from './routes/lists.js';
import { loginRoutes } from './routes/login.js';
import { overviewRoutes } from './routes/overview.js';
import { rowRoutes } from './routes/rows.js';
import { runActionRoutes } from './routes/run-actions.js';
import { runFindRoutes } from './routes/run-find.js';
import { scheduleRoutes } from './routes/schedules.js';
import { versionRoutes } from './routes/versions.js';
import { CsrfTokens } from './security/csrf.js';
import { IdempotencyStore } from './security/idempotency.js';
import { authenticate, csrfAndPage, securityHeaders } from './security/middleware.js';
import type { ResolutionOutcome } from './views/confirm.js';
import { messagePage } from './views/layout.js';
import type { PageContext } from './views/page-context.js';
import type { RunOutcome } from './run/run-action.js';

/**
 * The dashboard as a Hono app under `settings.basePath`: security headers, then who may come in,
 * then the static assets, then CSRF and the page context, then the pages.
 */
export function dashboardApp(settings: DashboardSettings): DashboardApp {
  // not strict: under a base path, its overview is both /admin/queues and /admin/queues/ (the
  // links use the latter)
  const app = new Hono<DashboardEnv>({ strict: false }).basePath(settings.basePath || '/');
  const deps = {
    settings,
    tables: leasedTables(settings.schema),
    outcomes: new IdempotencyStore<ResolutionOutcome>(),
    runOutcomes: new IdempotencyStore<RunOutcome>(),
  };
  app.use('*', securityHeaders());
  app.use('*', authenticate(settings));
  assetRoutes(app);
  app.use('*', csrfAndPage(settings, new CsrfTokens()));
  loginRoutes(app, deps);
  overviewRoutes(app, deps);
  listRoutes(app, deps);
  runFindRoutes(app, deps);
  rowRoutes(app, deps);
  runActionRoutes(app, deps);
  deadRoutes(app, deps);
  scheduleRoutes(app, deps);
  limitRoutes(app, deps);
  versionRoutes(app, deps);
  app.notFound((c) => {
    const page = c.get('page');
    return page === undefined ? c.text('Not found.', 404) : c.html(messagePage(page, 'Not found', 'There is no such page here.', { href: `${page.base}/`, label: 'Overview' }), 404);
  });
  app.onError((error, c) => {
    const status = error instanceof HTTPException ? error.status : 500;
    const message = error instanceof HTTPException ? error.message : `Something failed: ${toError(error).message}`;
    const page: PageContext | undefined = c.get('page');
    if (page === undefined) return c.text(message, status);
    return c.html(messagePage(page, status === 400 ? 'Cannot do that' : 'Error', message, { href: `${page.base}/`, label: 'Overview' }), status);
  });
  return app;
}
