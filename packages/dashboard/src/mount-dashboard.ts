import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { dashboardApp } from './dashboard-app.js';
import { dashboardSettings, type DashboardOptions } from './options.js';

/** A mounted dashboard: a node:http handler, which also has the Web-standard `fetch` form. */
export interface DashboardHandler {
  /** For `http.createServer(handler)`, Express / Connect `app.use('/admin/queues', handler)`, Fastify's raw request. */
  (request: IncomingMessage, response: ServerResponse): void;
  /**
   * The same dashboard for runtimes with Web-standard requests (Hono, Bun, Deno …). It cannot
   * see the peer's address, so without `auth` or `token` it answers nobody.
   */
  readonly fetch: (request: Request) => Promise<Response>;
}

/**
 * Serves the dashboard from your own process. Options are checked here (a mistake throws
 * `ConfigError`); nothing touches the database until the first request. Under Express, mount it
 * with the same `basePath` it was given (it reads `req.originalUrl`).
 *
 * @example
 * import http from 'node:http';
 * const dashboard = mountDashboard({ database: pool, basePath: '/admin/queues' });
 * http.createServer(dashboard).listen(4100, '127.0.0.1');
 * // Express: app.use('/admin/queues', dashboard)
 */
export function mountDashboard(options: DashboardOptions): DashboardHandler {
  const settings = dashboardSettings(options);
  const app = dashboardApp(settings);
  // overrideGlobalObjects: false: the dashboard must not swap the process's global Request / Response
  const listener = getRequestListener(app.fetch, { overrideGlobalObjects: false });
  const handler = (request: IncomingMessage, response: ServerResponse): void => {
    // Express strips its mount path from req.url; the app routes on the full path
    const original = (request as IncomingMessage & { originalUrl?: unknown }).originalUrl;
    if (typeof original === 'string') request.url = original;
    void listener(request, response);
  };
  return Object.assign(handler, { fetch: async (request: Request) => app.fetch(request) });
}
