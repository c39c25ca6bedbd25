import {
  ConfigError,
  INPUT_LIMITS,
  INTEGER_RANGES,
  leaseDeadList,
  leasePurgeDone,
  leaseRetryDeadMany,
  leaseSkipDeadMany,
  type DeadResolution,
  type Duration,
  type Executor,
  type LeasedTable,
  type LeaseStats,
} from '@leasehold/core';
import { checkInteger, checkOptionKeys, checkRowId, checkText, optionKeys, parseDuration } from '@leasehold/core/internal';
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

const DEAD_LIST_OPTIONS = optionKeys<DeadListOptions>()('outbox.dead', ['limit', 'afterId']);

/** Options of `Outbox.purgeDone`. */
export interface PurgeDoneOptions {
  /** Keep delivered messages this long after delivery (ms or e.g. `'7d'`); 0 purges all. */
  olderThan: Duration;
  /** Rows per DELETE statement; each statement locks at most this many. @defaultValue 1000 */
  batchSize?: number;
  /** Stops between batches when aborted; the rows deleted so far stay deleted. */
  signal?: AbortSignal;
}

const PURGE_DONE_OPTIONS = optionKeys<PurgeDoneOptions>()('outbox.purgeDone', ['olderThan', 'batchSize', 'signal']);

/** What `Outbox.purgeDone` deleted. */
export interface PurgeDoneResult {
  readonly deleted: number;
  /** DELETE statements run. */
  readonly batches: number;
}

/** @internal */
export async function listDead(executor: Executor, table: LeasedTable<OutboxRow>, options: DeadListOptions = {}): Promise<DeadMessage[]> {
  checkOptionKeys(options, DEAD_LIST_OPTIONS);
  const limit = checkInteger(options.limit ?? 100, 'limit', INTEGER_RANGES.batch);
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
  checkOptionKeys(options, PURGE_DONE_OPTIONS);
  const olderThanMs = parseDuration(options?.olderThan, 'olderThan', { allowZero: true });
  const batchSize = checkInteger(options.batchSize ?? 1_000, 'batchSize', INTEGER_RANGES.purgeBatchSize);
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
  const { min, max } = INTEGER_RANGES.idsPerCall;
  if (!Array.isArray(ids) || ids.length < min || ids.length > max) {
    throw new ConfigError(option, `Expected \`${option}\` to be a non-empty array of at most ${max} message ids`);
  }
  // ids may come as numbers or bigints from an application's own queries
  return ids.map((id: unknown) => checkRowId(typeof id === 'bigint' || typeof id === 'number' ? String(id) : id, option));
}

function checkReason(reason: unknown): string {
  const text = checkText(reason, 'reason', { maxBytes: INPUT_LIMITS.reasonBytes });
  if (text.trim() === '') throw new ConfigError('reason', 'Expected `reason` to say why, for the next person');
  return text;
}
