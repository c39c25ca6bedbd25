import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * CSRF tokens bound to a browser: each browser gets a random nonce in an HttpOnly, SameSite=Strict
 * cookie, and every form carries HMAC-SHA256(secret, nonce). A forged cross-site form cannot read
 * the cookie nor compute the token; the secret is random per dashboard, so tokens end with the
 * process. {@link checkFetchSite} adds the browser's own word on where a request came from.
 */
export class CsrfTokens {
  readonly #secret = randomBytes(32);

  /** A fresh nonce for the cookie. */
  newNonce(): string {
    return randomBytes(24).toString('base64url');
  }

  /** The token forms carry for this nonce. */
  tokenFor(nonce: string): string {
    return createHmac('sha256', this.#secret).update(nonce).digest('base64url');
  }

  /** Whether `token` was issued for `nonce`, compared in constant time. */
  verify(nonce: string | undefined, token: unknown): boolean {
    if (nonce === undefined || nonce === '' || typeof token !== 'string') return false;
    const want = Buffer.from(this.tokenFor(nonce));
    const got = Buffer.from(token);
    return want.length === got.length && timingSafeEqual(want, got);
  }
}

/**
 * Refuses what a browser says came from another site: `Sec-Fetch-Site` other than `same-origin`
 * (or `none`, typed by the person), or else an `Origin` other than the request's own. Requests
 * with neither header (curl, scripts) are left to the token check.
 */
export function checkFetchSite(headers: Headers, requestUrl: string): boolean {
  // a browser that sends Sec-Fetch-Site says it for sure; Origin is the fallback (it is `null`
  // under some referrer policies, so it is not read when the former is there)
  const site = headers.get('sec-fetch-site');
  if (site !== null) return site === 'same-origin' || site === 'none';
  const origin = headers.get('origin');
  if (origin === null) return true;
  if (origin === 'null') return false;
  const host = headers.get('host');
  try {
    const o = new URL(origin);
    return o.host === (host ?? new URL(requestUrl).host);
  } catch {
    return false;
  }
}
