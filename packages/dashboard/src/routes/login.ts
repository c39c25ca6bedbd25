import { setCookie } from 'hono/cookie';
import type { DashboardApp, RouteDeps } from '../env.js';
import { one } from '../input.js';
import { COOKIES } from '../security/middleware.js';
import { tokenDigest, tokenMatches } from '../security/token.js';
import { loginPage } from '../views/login.js';

/** GET / POST /login, when the dashboard has a token. */
export function loginRoutes(app: DashboardApp, deps: RouteDeps): void {
  const token = deps.settings.token;
  if (token === undefined) return;
  app.get('/login', (c) => c.html(loginPage(c.get('page'), false)));
  app.post('/login', async (c) => {
    const given = one((await c.req.parseBody()).token);
    if (!tokenMatches(token, given)) return c.html(loginPage(c.get('page'), true), 401);
    setCookie(c, COOKIES.auth, tokenDigest(token), {
      path: deps.settings.basePath || '/', httpOnly: true, sameSite: 'Strict', secure: c.req.url.startsWith('https:'),
    });
    return c.redirect(`${deps.settings.basePath}/`, 303);
  });
}
