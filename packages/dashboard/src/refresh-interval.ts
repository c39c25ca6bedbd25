/** The live overview spends at most this share of the database's time on its own refreshes. */
const MAX_SHARE = 0.1;

/**
 * How long the overview waits before refreshing itself: the configured interval, stretched when
 * counting took long, so that one open page keeps the database busy at most a tenth of the time
 * (a table of millions of finished rows, not purged, makes every count a full scan). Whole
 * seconds once stretched.
 *
 * @example
 * refreshInterval(5_000, 120); // 5000
 * refreshInterval(5_000, 2_300); // 23000
 */
export function refreshInterval(configuredMs: number, tookMs: number): number {
  const floor = tookMs / MAX_SHARE;
  return floor <= configuredMs ? configuredMs : Math.ceil(floor / 1_000) * 1_000;
}
