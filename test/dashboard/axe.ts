// axe-core, the accessibility engine browsers' audits use, run inside a page (through the
// DevTools protocol, which the page's CSP does not govern), in the light and the dark scheme: the
// dashboard's browser tests expect no WCAG 2.1 A / AA violation it can find.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** Each violation axe-core finds on the page as it is now, in both schemes, as one line. */
export async function axeViolations(page: Page): Promise<string[]> {
  const found: string[] = [];
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const result = (await page.evaluate(`${AXE};
      axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
        .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))`)) as AxeViolation[];
    for (const v of result) found.push(`${scheme} ${new URL(page.url()).pathname}: ${v.id} (${v.impact}) ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  }
  await page.emulateMedia({ colorScheme: 'light' });
  return found;
}

/** Whether the page scrolls sideways (a wide table or picture must scroll in its own region). */
export async function pageOverflow(page: Page): Promise<{ scrollWidth: number; clientWidth: number }> {
  const [scrollWidth, clientWidth] = (await page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]')) as [number, number];
  return { scrollWidth, clientWidth };
}
