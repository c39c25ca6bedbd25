import {
  leaseRetryDeadMany,
  leaseSkipDeadMany,
  withTransaction,
  type DeadResolution,
  type LeasedTable,
  type TransactionSource,
} from '@leasehold/core';
import { toError } from '@leasehold/core/internal';
import type { TableKind } from './options.js';
import type { ResolutionOutcome } from './views/confirm.js';

/** Thrown inside the transaction to roll it back: some ids were not dead. */
class NotAllDead extends Error {
  constructor(readonly rejected: DeadResolution['rejected']) {
    super('some ids are not dead');
  }
}

/** A retry or skip of dead rows as a person confirmed it. */
export interface Resolution {
  readonly kind: TableKind;
  readonly table: LeasedTable<unknown>;
  readonly action: 'retry' | 'skip';
  readonly ids: readonly string[];
  readonly reason: string;
}

/**
 * Applies a confirmed retry / skip through core's `leaseRetryDeadMany` / `leaseSkipDeadMany`,
 * the statements `leasehold dead retry|skip` runs, and like the CLI all or nothing: when any id
 * is no longer dead (someone else resolved it, a worker runs it), the transaction rolls back and
 * the outcome says why. Never throws: a failure becomes the outcome's `refused`.
 */
export async function resolveDead(database: TransactionSource, r: Resolution): Promise<ResolutionOutcome> {
  const statement = r.action === 'retry' ? leaseRetryDeadMany : leaseSkipDeadMany;
  try {
    const result = await withTransaction(database, async (trx) => {
      const done = await statement(trx, r.table, r.ids, r.reason);
      if (done.rejected.length > 0) throw new NotAllDead(done.rejected);
      return done;
    });
    return { kind: r.kind, action: r.action, changed: result.changed, refused: [] };
  } catch (error) {
    return { kind: r.kind, action: r.action, changed: [], refused: explain(error) };
  }
}

function explain(error: unknown): string[] {
  if (error instanceof NotAllDead) {
    return error.rejected.map((x) => (x.status === null ? `#${x.id} does not exist` : `#${x.id} is not dead any more (it is ${x.status})`));
  }
  const e = error as { code?: string; constraint?: string };
  if (e.code === '23505' && e.constraint?.endsWith('_dedup')) {
    return ['a live task with the same dedup key exists already, so retrying would run the same work twice'];
  }
  return [`the database refused it: ${toError(error).message}`];
}
