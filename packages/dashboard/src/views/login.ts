import { h, type Html } from './html.js';
import { layout } from './layout.js';
import type { PageContext } from './page-context.js';

/** Asks for the dashboard's token (kept afterwards as its SHA-256 in an HttpOnly cookie). */
export function loginPage(ctx: PageContext, failed: boolean): Html {
  return layout(ctx, null, 'Sign in', h`<h1>Sign in</h1>
${failed ? h`<p role="alert" class="notice">That token is not the dashboard's.</p>` : ''}
<form method="post" action="${ctx.base}/login" class="login">
<div><label for="token">Dashboard token</label><input id="token" name="token" type="password" required autocomplete="current-password"></div>
<div class="actions"><button type="submit">Sign in</button></div>
</form>`);
}
