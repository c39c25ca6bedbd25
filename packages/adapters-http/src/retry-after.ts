// RFC 9110 §10.2.3: Retry-After = HTTP-date / delay-seconds, where delay-seconds = 1*DIGIT.
const DELAY_SECONDS = /^\d+$/;

/**
 * The earliest next attempt a `Retry-After` value asks for, in ms from the response, or
 * `undefined` when the header is absent or unreadable. A date is measured against the
 * response's own `Date` header when it has one, so a skewed clock on either side does not move
 * the retry; otherwise against `nowMs`. A date in the past means "now" (0).
 *
 * @example
 * retryAfterMs('120', { nowMs: Date.now() }); // 120000
 * retryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT', { nowMs, date: 'Wed, 21 Oct 2015 07:27:00 GMT' }); // 60000
 */
export function retryAfterMs(
  value: string | null | undefined,
  { nowMs, date }: { nowMs: number; date?: string | null },
): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (DELAY_SECONDS.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds) ? seconds * 1000 : undefined;
  }
  // a bare number with a sign or fraction is neither form: Date.parse would read it as a year
  if (/^[\d.+-]+$/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  const serverNow = date ? Date.parse(date) : Number.NaN;
  const base = Number.isNaN(serverNow) ? nowMs : serverNow;
  return Math.max(0, at - base);
}
