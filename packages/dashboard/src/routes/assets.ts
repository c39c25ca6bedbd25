import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { STYLESHEET } from '../assets/style.js';
import type { DashboardApp } from '../env.js';

const sources = new Map<string, string>();

// htmx and idiomorph's htmx extension ship as files of their packages; each is read once, on
// its first request
function packageFile(file: string): string {
  let text = sources.get(file);
  if (text === undefined) sources.set(file, (text = readFileSync(createRequire(import.meta.url).resolve(file), 'utf8')));
  return text;
}

/**
 * The stylesheet, htmx, and idiomorph's extension for htmx (the overview's refresh morphs the
 * page in place, so focus and a table's sideways scroll survive it), from the dashboard itself:
 * the CSP allows scripts from nowhere else.
 */
export function assetRoutes(app: DashboardApp): void {
  const cache = { 'Cache-Control': 'public, max-age=3600' };
  const script = { ...cache, 'Content-Type': 'text/javascript; charset=utf-8' };
  app.get('/assets/dashboard.css', (c) => c.body(STYLESHEET, 200, { ...cache, 'Content-Type': 'text/css; charset=utf-8' }));
  app.get('/assets/htmx.min.js', (c) => c.body(packageFile('htmx.org/dist/htmx.min.js'), 200, script));
  app.get('/assets/idiomorph-ext.min.js', (c) => c.body(packageFile('idiomorph/dist/idiomorph-ext.min.js'), 200, script));
}
