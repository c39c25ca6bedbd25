import { createHash, timingSafeEqual } from 'node:crypto';

/** SHA-256 of a token, hex: what the login cookie holds (never the token itself). */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Whether `given` is the token, in constant time (both sides hashed to one length first). */
export function tokenMatches(token: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(Buffer.from(tokenDigest(token)), Buffer.from(tokenDigest(given)));
}

/** Whether a cookie value is the digest of the token, in constant time. */
export function digestMatches(token: string, cookie: string | undefined): boolean {
  if (cookie === undefined || cookie.length !== 64) return false;
  return timingSafeEqual(Buffer.from(tokenDigest(token)), Buffer.from(cookie));
}
