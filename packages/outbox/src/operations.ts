import {
  ConfigError,
  leaseDeadList,
  leasePurgeDone,
  leaseRetryDeadMany,
  leaseSkipDeadMany,
  parseDuration,
  type DeadResolution,
  type Duration,
  type Executor,
  type LeasedTable,
  type LeaseStats,
} from '@leasehold/core';
import type { OutboxRow } from './outbox-table.js';

/**
 * The design article's monitoring queries (section 6) on the outbox, read in one snapshot
 * (core's `leaseStats`). Its `oldestPendingAgeMs`, the age of the oldest undelivered message,
 * is the most important outbox metric: it grows without bound when dispatch stops.
 */
export type OutboxStats = LeaseStats;

/** A dead message, for a person to look at (the article's dead-letter query). */
export interface DeadMessage {
  readonly id: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  readonly payload: unknown;
  readonly headers: Readonly<Record<string, string>>;
  readonly attempts: number;
  /** Why it died: the publisher's error, "retries exhausted: …", or the reap message. */
  readonly lastError: string | null;
  /** Set when it belongs to an ordered aggregate, whose later messages it now blocks. */
  readonly groupKey: string | null;
  readonly createdAt: Date;
}

/** Options of `Outbox.dead`. */
export interface DeadListOptions {
  /** Most messages to return. @defaultValue 100 */
  limit?: number;
  /** Return messages with ids above this one (paging). */
  afterId?: string;
}

/** Options of `Outbox.purgeDone`. */
export interface PurgeDoneOptions {
  /** Keep delivered messages this long after delivery (ms or e.g. `'7d'`); 0 purges all. */
  olderThan: Duration;
  /** Rows per DELETE statement; each statement locks at most this many. @defaultValue 1000 */
  batchSize?: number;
  /** Stops between batches when aborted; the rows deleted so far stay deleted. */
  signal?: AbortSignal;
}

/** What `Outbox.purgeDone` deleted. */
export interface PurgeDoneResult {
  readonly deleted: number;
  /** DELETE statements run. */
  readonly batches: number;
}

/** @internal */
export async function listDead(executor: Executor, table: LeasedTable<OutboxRow>, options: DeadListOptions = {}): Promise<DeadMessage[]> {
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new ConfigError('limit', `Expected \`limit\` to be an integer between 1 and 10000, got ${String(limit)}`);
  }
  const afterId = options.afterId === undefined ? null : checkIds([options.afterId], 'afterId')[0]!;
  const rows = await leaseDeadList(executor, table, { limit, afterId });
  return rows.map((r) => ({
    id: r.id,
    aggregateType: r.aggregateType,
    aggregateId: r.aggregateId,
    eventType: r.eventType,
    payload: r.payload,
    headers: r.headers,
    attempts: r.attempts,
    lastError: r.lastError,
    groupKey: r.groupKey,
    createdAt: r.createdAt,
  }));
}

/** @internal */
export async function retryDead(executor: Executor, table: LeasedTable<unknown>, ids: readonly string[], reason: string): Promise<DeadResolution> {
  return leaseRetryDeadMany(executor, table, checkIds(ids, 'ids'), checkReason(reason));
}

/** @internal */
export async function skipDead(executor: Executor, table: LeasedTable<unknown>, ids: readonly string[], reason: string): Promise<DeadResolution> {
  return leaseSkipDeadMany(executor, table, checkIds(ids, 'ids'), checkReason(reason));
}

/** @internal */
export async function purgeDone(executor: Executor, table: LeasedTable<unknown>, options: PurgeDoneOptions): Promise<PurgeDoneResult> {
  const olderThanMs = parseDuration(options?.olderThan, 'olderThan', { allowZero: true });
  const batchSize = options.batchSize ?? 1_000;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
    throw new ConfigError('batchSize', `Expected \`batchSize\` to be an integer between 1 and 100000, got ${String(batchSize)}`);
  }
  let deleted = 0;
  let batches = 0;
  // one short statement per batch, so no lock outlives a batch (with a pool executor)
  while (!options.signal?.aborted) {
    const n = await leasePurgeDone(executor, table, olderThanMs, batchSize);
    deleted += n;
    batches++;
    if (n < batchSize) break;
  }
  return { deleted, batches };
}

function checkIds(ids: unknown, option: string): string[] {
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > 10_000) {
    throw new ConfigError(option, `Expected \`${option}\` to be a non-empty array of at most 10000 message ids`);
  }
  return ids.map((id: unknown) => {
    const text = typeof id === 'bigint' || typeof id === 'number' ? String(id) : id;
    if (typeof text !== 'string' || !/^[1-9][0-9]{0,18}$/.test(text)) {
      throw new ConfigError(option, `Expected \`${option}\` to hold message ids (positive integers), got ${JSON.stringify(String(id))}`);
    }
    return text;
  });
}

function checkReason(reason: unknown): string {
  if (typeof reason !== 'string' || reason.trim() === '' || reason.length > 2_000) {
    throw new ConfigError('reason', 'Expected `reason` to be a non-empty string of at most 2000 characters: say why, for the next person');
  }
  return reason;
}
