import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's Chromium, which .ci/run installs (Playwright's own browser download needs a network). */
export const CHROMIUM = process.env.LEASEHOLD_CHROMIUM ?? '/usr/bin/chromium';

/** A headless Chromium with a fresh profile; `close()` ends it and removes the profile. */
export interface TestBrowser {
  /** The browser's one context (its profile): pages, cookies, `request`. */
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** Starts the system's Chromium headless, offline-friendly, in a throwaway profile. */
export async function launchBrowser(): Promise<TestBrowser> {
  const profile = await mkdtemp(join(tmpdir(), 'leasehold-chromium-'));
  // a persistent context is how Playwright takes a profile folder (it refuses --user-data-dir in args)
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    timeout: 30_000,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
}
