import type { MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import type { DashboardEnv } from '../env.js';
import type { DashboardSettings } from '../options.js';
import { dashboardTables } from '../sql/dashboard-tables.js';
import { checkFetchSite, type CsrfTokens } from './csrf.js';
import { loopbackRefusal } from './loopback.js';
import { digestMatches, tokenMatches } from './token.js';

/** Cookie names; scoped to the dashboard's path. */
export const COOKIES = { csrf: 'lh_dash_csrf', auth: 'lh_dash_auth' } as const;

// scripts only from the dashboard itself; no inline script or style; no framing; forms post home
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Security headers on every response, error pages included. */
export function securityHeaders(): MiddlewareHandler<DashboardEnv> {
  return async (c, next) => {
    await next();
    c.header('Content-Security-Policy', CSP);
    c.header('X-Content-Type-Options', 'nosniff');
    // same-origin, not no-referrer: under no-referrer Chromium posts forms with `Origin: null`
    c.header('Referrer-Policy', 'same-origin');
    c.header('X-Frame-Options', 'DENY');
    if (!c.req.path.includes('/assets/')) c.header('Cache-Control', 'no-store');
  };
}

/**
 * Who may come in: the `token` (bearer header, or the login cookie), then the `auth` hook, both
 * when both are set; with neither, loopback peers only, asking for a loopback host, not through a
 * proxy ({@link loopbackRefusal}). A person without the token is sent to the login page.
 */
export function authenticate(settings: DashboardSettings): MiddlewareHandler<DashboardEnv> {
  const login = `${settings.basePath}/login`;
  return async (c, next) => {
    if (settings.token !== undefined && c.req.path !== login && !c.req.path.startsWith(`${settings.basePath}/assets/`)) {
      const bearer = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1];
      const ok = tokenMatches(settings.token, bearer) || digestMatches(settings.token, getCookie(c, COOKIES.auth));
      if (!ok) return c.req.method === 'GET' ? c.redirect(login, 303) : c.text('Sign in first.', 401);
    }
    if (settings.auth !== undefined && !(await settings.auth(c.req.raw))) return c.text('Not authorised.', 401);
    if (settings.auth === undefined && settings.token === undefined) {
      const refusal = loopbackRefusal(c.env?.incoming?.socket?.remoteAddress, c.req.raw.headers);
      if (refusal !== null) return c.text(`This dashboard has no auth hook or token configured: ${refusal}.`, 403);
    }
    return next();
  };
}

/**
 * Gives each browser its CSRF nonce cookie and each page its token; refuses every POST whose
 * token is missing or wrong, or that the browser says came from another site, and every POST of
 * a read-only dashboard (the login form excepted, which is checked by its origin only).
 */
export function csrfAndPage(settings: DashboardSettings, tokens: CsrfTokens): MiddlewareHandler<DashboardEnv> {
  const login = `${settings.basePath}/login`;
  return async (c, next) => {
    let nonce = getCookie(c, COOKIES.csrf);
    if (c.req.method === 'POST') {
      if (!checkFetchSite(c.req.raw.headers, c.req.url)) return c.text('Cross-site request refused.', 403);
      if (c.req.path !== login) {
        const body = await c.req.parseBody({ all: true });
        if (!tokens.verify(nonce, body._csrf)) return c.text('Missing or invalid CSRF token: reload the page and try again.', 403);
        if (settings.readOnly) return c.text('This dashboard is read-only.', 403);
      }
    } else if (nonce === undefined || !/^[A-Za-z0-9_-]{32}$/.test(nonce)) {
      nonce = tokens.newNonce();
      setCookie(c, COOKIES.csrf, nonce, { path: settings.basePath || '/', httpOnly: true, sameSite: 'Strict', secure: c.req.url.startsWith('https:') });
    }
    const tables = await dashboardTables(settings.database, settings.schema);
    c.set('page', {
      base: settings.basePath,
      readOnly: settings.readOnly,
      csrf: nonce === undefined ? '' : tokens.tokenFor(nonce),
      schema: settings.schema,
      pageSize: settings.pageSize,
      tables,
    });
    return next();
  };
}
