// A worker writes a large batch of completions that hand ordering groups their next heads as two
// transactions at once, so the first half's commit lets the next claim start while the second is
// written. Each half must stand on its own: one half held up (here, by a lock on one of its rows)
// does not hold up the other, every write hears its own result, and every group gets its next head.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defineTask, enqueueMany, taskTable } from '@leasehold/core';
import { compareIds, leaseClaim, toDone, type FinalizeResult } from '@leasehold/core/internal';
import { Finalizer, type QueuedWrite } from '../../packages/core/src/worker/finalizer.js';
import { useTestDatabase, waitForLockWaiters } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const GROUPS = 600;
// generous against a loaded CI machine; the half that is not blocked needs a few hundred ms
const HALF_DEADLINE_MS = 30_000;

const step = defineTask<{ n: number }>('finalize-split', { ordered: true, handler: () => {} });

interface Told {
  readonly result: FinalizeResult | undefined;
  readonly error: Error | undefined;
}

/** A queued write whose outcome can be awaited, or checked for at once. */
function write(id: string, leaseVersion: number, groupKey: string | null): { item: QueuedWrite; told: Promise<Told>; wasTold: () => boolean } {
  let tell!: (told: Told) => void;
  let wasTold = false;
  const told = new Promise<Told>((resolve) => (tell = resolve));
  const finalized = (result: FinalizeResult | undefined, error?: Error): void => {
    wasTold = true;
    tell({ result, error });
  };
  const item: QueuedWrite = { id, leaseVersion, groupKey, parentId: null, transition: toDone(), finalized };
  return { item, told, wasTold: () => wasTold };
}

function deadline<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} not within ${HALF_DEADLINE_MS} ms`)), HALF_DEADLINE_MS)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('a large batch of group-settling writes', () => {
  it(`of ${GROUPS} heads goes out as two transactions that do not wait for each other`, async () => {
    for (const n of [0, 1]) {
      await enqueueMany(t.pool, step, Array.from({ length: GROUPS }, (_, g) => ({ payload: { n }, groupKey: `g-${g}` })));
    }
    // every group's head, in id order
    const { claimed } = await leaseClaim(t.pool, table, { owner: 'split', batch: GROUPS, leaseMs: 3_600_000 });
    expect(claimed).toHaveLength(GROUPS);
    const writes = claimed.map((c) => write(c.id, c.leaseVersion, c.groupKey));
    const firstHalf = writes.slice(0, GROUPS / 2);
    const secondHalf = writes.slice(GROUPS / 2);

    // hold one row of the first half: its transaction waits, the second half's must not
    const holder = await t.client();
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM leasehold.task WHERE id = $1 FOR NO KEY UPDATE', [firstHalf[0]!.item.id]);

    const errors: Error[] = [];
    const finalizer = new Finalizer(t.pool, table, (error) => errors.push(error));
    for (const w of writes) finalizer.enqueue(w.item); // one tick: one batch
    await waitForLockWaiters(t.db);
    const second = await deadline(Promise.all(secondHalf.map((w) => w.told)), 'the unblocked half');
    expect(firstHalf.filter((w) => w.wasTold()), 'the blocked half waits for its row').toEqual([]);

    await holder.query('ROLLBACK');
    const first = await deadline(Promise.all(firstHalf.map((w) => w.told)), 'the released half');
    await finalizer.idle();
    expect(errors).toEqual([]);
    // every group's second row is its head now, pending and claimable
    const { rows: heads } = await sql<{ id: string; group_key: string; n: string }>`
      SELECT id::text, group_key, payload->>'n' AS n FROM leasehold.task WHERE status = 'pending' AND NOT blocked`.execute(t.db);
    expect(heads).toHaveLength(GROUPS);
    expect(new Set(heads.map((h) => h.group_key)).size).toBe(GROUPS);
    expect(heads.every((h) => h.n === '1')).toBe(true);

    // each write tells the lowest next head it made claimable: its half's groups' lowest
    const lowestHead = (half: typeof writes) => {
      const groups = new Set(half.map((w) => w.item.groupKey));
      return heads.filter((h) => groups.has(h.group_key)).map((h) => h.id).sort(compareIds)[0];
    };
    [...first, ...second].forEach((told, i) => {
      expect(told.error).toBeUndefined();
      const unblockedFrom = lowestHead(i < GROUPS / 2 ? firstHalf : secondHalf);
      expect(told.result).toEqual({ id: writes[i]!.item.id, won: true, status: 'done', unblockedFrom });
    });
  });
});
