import { sql, type RawBuilder } from 'kysely';

/**
 * The one definition of "oldest pending age" (`leaseStats`, `leaseQueueStats`, the CLI, the
 * dashboard): for the rows of the aggregate it is used in, how long the longest-waiting
 * unfinished row has waited, in ms by the database's clock, or null when none waits. A row
 * waits from when it became due if it never ran, else from its creation (a retry in backoff has
 * waited since it was first enqueued); a row scheduled for later that never ran is not waiting
 * yet. Blocked rows wait too: an aggregate stuck behind a dead head shows here. For outbox rows,
 * which are due when written, this is the design article's `now() - min(created_at)` over
 * pending and processing rows.
 */
export function oldestWaitingAgeMs(): RawBuilder<number | null> {
  return ageMs(waitingSince());
}

/**
 * The aggregate behind {@link oldestWaitingAgeMs}: when the longest-waiting unfinished row of the
 * aggregate's rows began to wait, or null. For a statement that aggregates in two steps (take
 * the `min` of it over the groups, then {@link ageMs}).
 */
export function waitingSince(): RawBuilder<Date | null> {
  return sql<Date | null>`min(
      CASE WHEN attempts = 0 THEN available_at ELSE created_at END
    ) FILTER (
      WHERE status = 'processing' OR (status = 'pending' AND (attempts > 0 OR available_at <= now()))
    )`;
}

/** Milliseconds from `since` (a timestamptz expression) to the statement's `now()`. */
export function ageMs(since: RawBuilder<Date | null>): RawBuilder<number | null> {
  return sql<number | null>`extract(epoch FROM now() - ${since}) * 1000`;
}
