import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { STYLESHEET } from '../assets/style.js';
import type { DashboardApp } from '../env.js';

let htmx: string | undefined;

// htmx ships as a file of the htmx.org package; read once, on first request
function htmxSource(): string {
  htmx ??= readFileSync(createRequire(import.meta.url).resolve('htmx.org/dist/htmx.min.js'), 'utf8');
  return htmx;
}

/** The stylesheet and htmx, from the dashboard itself (the CSP allows scripts from nowhere else). */
export function assetRoutes(app: DashboardApp): void {
  const cache = { 'Cache-Control': 'public, max-age=3600' };
  app.get('/assets/dashboard.css', (c) => c.body(STYLESHEET, 200, { ...cache, 'Content-Type': 'text/css; charset=utf-8' }));
  app.get('/assets/htmx.min.js', (c) => c.body(htmxSource(), 200, { ...cache, 'Content-Type': 'text/javascript; charset=utf-8' }));
}
