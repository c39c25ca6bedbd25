import { h, type Html } from './html.js';
import type { PageContext, Section } from './page-context.js';

const NAV: ReadonlyArray<readonly [Section, string, string]> = [
  ['overview', 'Overview', '/'],
  ['tasks', 'Tasks', '/tasks'],
  ['outbox', 'Outbox', '/outbox'],
  ['dead', 'Dead letters', '/dead'],
  ['schedules', 'Schedules', '/schedules'],
  ['limits', 'Limits', '/limits'],
  ['versions', 'Versions', '/versions'],
];

// htmx may not inject styles (the CSP allows only this dashboard's stylesheet) nor evaluate code
const HTMX_CONFIG = '{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"historyCacheSize":0}';

/** The page shell: skip link, header with the main navigation, main landmark, footer. */
export function layout(ctx: PageContext, section: Section | null, title: string, body: Html): Html {
  const links = NAV.filter(([s]) => visible(ctx, s)).map(
    ([s, label, path]) => h`<li><a href="${ctx.base}${path}"${s === section ? h` aria-current="page"` : ''}>${label}</a></li>`,
  );
  return h`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="${HTMX_CONFIG}">
<title>${title} · leasehold</title>
<link rel="stylesheet" href="${ctx.base}/assets/dashboard.css">
<script src="${ctx.base}/assets/htmx.min.js" defer></script>
<script src="${ctx.base}/assets/idiomorph-ext.min.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="${ctx.base}/">leasehold</a>
  <nav aria-label="Main"><ul>${links}</ul></nav>
  ${ctx.readOnly ? h`<span class="badge" title="Retry, skip and pause are turned off">read-only</span>` : ''}
</header>
<main id="main" tabindex="-1">
${body}
</main>
<footer class="foot">schema <code>${ctx.schema}</code> · times in UTC</footer>
</body>
</html>`;
}

function visible(ctx: PageContext, section: Section): boolean {
  if (section === 'tasks') return ctx.tables.task;
  if (section === 'outbox') return ctx.tables.outbox;
  if (section === 'schedules') return ctx.tables.schedule;
  // shown with the task table: on a schema without limits yet, the page says so
  if (section === 'limits' || section === 'versions') return ctx.tables.task;
  return true;
}

/** A status as a word with a colour class (the word carries the meaning; colour only helps). */
export function statusBadge(status: string): Html {
  return h`<span class="status status-${status}">${status}</span>`;
}

/** A page that says what went wrong, e.g. a row that does not exist or a refused request. */
export function messagePage(ctx: PageContext, title: string, message: string, back?: { href: string; label: string }): Html {
  return layout(ctx, null, title, h`<h1>${title}</h1><p class="notice" role="alert">${message}</p>
${back ? h`<p><a href="${back.href}">${back.label}</a></p>` : ''}`);
}
