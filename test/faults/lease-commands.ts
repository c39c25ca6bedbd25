// The steps of the model-based test. Each step acts on the real database through leasehold's
// own primitives, predicts the result with the reference model, asserts both agree, and then
// checks the whole table (lease-check.ts). Arguments are drawn before the model exists, so a
// step picks its worker, token or row by index modulo what is there at the time.
import fc from 'fast-check';
import { sql } from 'kysely';
import { expect } from 'vitest';
import {
  leaseRetryDeadMany,
  leaseSkipDeadMany,
  markDead,
  markDone,
  reschedule,
  taskTable,
} from '@leasehold/core';
import {
  compareIds,
  leaseClaim,
  leaseExtendMany,
  leaseFinalizeMany,
  toDead,
  toDeferred,
  toDone,
  transitionFor,
  type Transition,
} from '@leasehold/core/internal';
import { checkAgainstModel, type Real } from './lease-check.js';
import { LIMIT, WORKERS, type LeaseModel, type Token } from './lease-model.js';

type Cmd = fc.AsyncCommand<LeaseModel, Real>;
const table = taskTable();
const LEASE_MS = 60_000;
const HOUR = 3_600_000;
// backoff so long that a retry is due only when random() is 0, so the model knows which
const POLICY = { backoff: { baseMs: HOUR, capMs: HOUR }, maxDeferAgeMs: null };

/** How a finalize step ends a task: every outcome a worker can write. */
export type OutcomeChoice = 'done' | 'retry-now' | 'retry-later' | 'defer-now' | 'defer-later' | 'defer-too-old' | 'dead';

function transitionOf(choice: OutcomeChoice, token: Token): { transition: Transition; tooOld: boolean } {
  const failure = { kind: 'retryable' as const, error: new Error(`boom ${token.id}`), retryAfterMs: undefined };
  switch (choice) {
    case 'done':
      return { transition: toDone(), tooOld: false };
    case 'retry-now':
    case 'retry-later':
      // what a worker writes: a retry, or dead once the claim used the last attempt
      return { transition: transitionFor(failure, token, POLICY, () => (choice === 'retry-now' ? 0 : 0.5))!, tooOld: false };
    case 'defer-now':
      return { transition: toDeferred(0, 'not yet'), tooOld: false };
    case 'defer-later':
      return { transition: toDeferred(HOUR, 'not yet'), tooOld: false };
    case 'defer-too-old':
      // an hour's delay on a one-minute age bound: dead, attempt refunded
      return { transition: toDeferred(HOUR, 'waited too long', 60_000), tooOld: true };
    case 'dead':
      return { transition: toDead('permanent: bad input'), tooOld: false };
  }
}

/**
 * One worker claims up to `batch` (optionally only some names, optionally also rows under the
 * limit); reaps on the way.
 */
class ClaimCommand implements Cmd {
  constructor(readonly worker: number, readonly batch: number, readonly names: readonly string[] | undefined, readonly flows = false) {}
  check = () => true;
  async run(m: LeaseModel, r: Real): Promise<void> {
    const reapable = m.reapable().map((t) => t.id);
    const expected = m.claimable(this.names, this.batch, this.flows);
    const promotable = this.flows ? m.promotable(this.batch) : [];
    for (const t of expected) {
      // a claim never takes a row somebody else still holds
      expect(t.status === 'processing' && !t.expired).toBe(false);
    }
    const { claimed, reaped, promoted } = await leaseClaim(r.pool, table, {
      owner: WORKERS[this.worker]!, batch: this.batch, leaseMs: LEASE_MS, names: this.names, flows: this.flows ? [LIMIT] : undefined,
    });
    expect(reaped.map((x) => x.id).sort()).toEqual([...reapable].sort());
    for (const x of reaped) expect(x.leaseVersion).toBe(m.get(x.id).leaseVersion);
    reapable.forEach((id) => m.applyReap(id));
    // rows under the limit that became due move where the next claim takes them
    expect(promoted).toBe(promotable.length);
    for (const t of promotable) t.scheduled = false;
    m.stats.promoted += promoted;
    // sorted by id, exactly the rows the model picks, nothing held by others
    expect(claimed.map((c) => c.id)).toEqual(expected.map((t) => t.id).sort(compareIds));
    for (const c of claimed) {
      const before = m.get(c.id);
      expect([c.leaseVersion, c.attempts, c.leaseOwner]).toEqual([before.leaseVersion + 1, before.attempts + 1, WORKERS[this.worker]]);
      m.applyClaim(this.worker, c.id);
    }
    await checkAgainstModel(m, r);
  }
  toString = () => `claim(${WORKERS[this.worker]}, batch=${this.batch}${this.names ? `, names=${this.names.join('|')}` : ''}${this.flows ? `, flows=${LIMIT}` : ''})`;
}

/** Every worker claims at once on its own connection: disjoint results, none held by another. */
class ConcurrentClaimCommand implements Cmd {
  constructor(readonly batch: number) {}
  check = () => true;
  async run(m: LeaseModel, r: Real): Promise<void> {
    const reapable = new Set(m.reapable().map((t) => t.id));
    const claimable = new Set(m.claimable(undefined).map((t) => t.id));
    const results = await Promise.all(
      WORKERS.map((owner) => leaseClaim(r.pool, table, { owner, batch: this.batch, leaseMs: LEASE_MS })),
    );
    const claimedIds = results.flatMap((x) => x.claimed.map((c) => c.id));
    const reapedIds = results.flatMap((x) => x.reaped.map((c) => c.id));
    expect(new Set(claimedIds).size, 'no row claimed twice').toBe(claimedIds.length);
    expect(claimedIds.every((id) => claimable.has(id)), 'only claimable rows').toBe(true);
    expect(new Set(reapedIds)).toEqual(reapable);
    expect(reapedIds).toHaveLength(reapable.size);
    reapedIds.forEach((id) => m.applyReap(id));
    results.forEach((x, w) => {
      expect(x.claimed.length).toBeLessThanOrEqual(this.batch);
      x.claimed.forEach((c) => expect(m.applyClaim(w, c.id).leaseVersion).toBe(c.leaseVersion));
    });
    await checkAgainstModel(m, r);
  }
  toString = () => `concurrentClaim(batch=${this.batch})`;
}

/** A person retries or skips a dead row; skipping an ordered group's dead head unblocks the next row. */
class ResolveDeadCommand implements Cmd {
  constructor(readonly pick: number, readonly skip: boolean) {}
  check = (m: Readonly<LeaseModel>) => m.list().some((t) => t.status === 'dead');
  async run(m: LeaseModel, r: Real): Promise<void> {
    const dead = m.list().filter((t) => t.status === 'dead');
    const t = dead[this.pick % dead.length]!;
    const resolve = this.skip ? leaseSkipDeadMany : leaseRetryDeadMany;
    const { changed } = await resolve(r.pool, table, [t.id], 'by the model');
    expect(changed).toEqual([t.id]);
    if (this.skip) t.status = 'done';
    else Object.assign(t, { status: 'pending', attempts: 0, due: true, scheduled: true, since: ++m.clock });
    await checkAgainstModel(m, r);
  }
  toString = () => `${this.skip ? 'skip' : 'retry'}Dead(pick=${this.pick})`;
}

/** Pure reap: a claim for a name no task has. */
class ReapCommand implements Cmd {
  check = () => true;
  async run(m: LeaseModel, r: Real): Promise<void> {
    return new ClaimCommand(0, 1, ['no-such-task']).run(m, r);
  }
  toString = () => 'reap()';
}

/** A worker extends some of the leases it holds (stale ones included). */
class HeartbeatCommand implements Cmd {
  constructor(readonly worker: number, readonly pick: number) {}
  check = (m: Readonly<LeaseModel>) => m.tokens[this.worker]!.length > 0;
  async run(m: LeaseModel, r: Real): Promise<void> {
    const tokens = pickTokens(m.tokens[this.worker]!, this.pick);
    const extended = await leaseExtendMany(r.pool, table, tokens.map((t) => ({ ...t, leaseMs: LEASE_MS })));
    for (const token of tokens) {
      const holds = m.holds(token);
      expect(extended.has(`${token.id}@${token.leaseVersion}`), `heartbeat ${token.id}@${token.leaseVersion}`).toBe(holds);
      if (holds) {
        m.get(token.id).expired = false;
        m.stats.heartbeatWon++;
      } else m.stats.heartbeatRefused++;
    }
    await checkAgainstModel(m, r);
  }
  toString = () => `heartbeat(${WORKERS[this.worker]}, pick=${this.pick})`;
}

/** A worker finalizes one token through the public primitives. */
class FinalizeCommand implements Cmd {
  constructor(readonly worker: number, readonly index: number, readonly choice: OutcomeChoice) {}
  check = (m: Readonly<LeaseModel>) => m.tokens[this.worker]!.length > 0 && this.choice !== 'defer-too-old';
  async run(m: LeaseModel, r: Real): Promise<void> {
    const held = m.tokens[this.worker]!;
    const token = held[this.index % held.length]!;
    const { transition } = transitionOf(this.choice, token);
    const holds = m.holds(token);
    let won: boolean;
    if (transition.to === 'done') won = await markDone(r.pool, token);
    else if (transition.to === 'dead') won = await markDead(r.pool, token, { error: transition.error });
    else {
      // reschedule prefixes a refunded (deferred) error with 'deferred: ' itself
      const error = transition.refund ? 'not yet' : (transition.error ?? '');
      won = await reschedule(r.pool, token, { delay: transition.delayMs, error, refundAttempt: transition.refund });
    }
    expect(won, `finalize ${token.id}@${token.leaseVersion} (${this.choice})`).toBe(holds);
    if (won) m.applyFinalize(token, transition);
    else m.stats.staleRefused++;
    await checkAgainstModel(m, r);
  }
  toString = () => `finalize(${WORKERS[this.worker]}, #${this.index}, ${this.choice})`;
}

/** A worker finalizes several tokens, each with its own outcome, in one fenced statement. */
class FinalizeManyCommand implements Cmd {
  constructor(readonly worker: number, readonly pick: number, readonly choices: readonly OutcomeChoice[]) {}
  check = (m: Readonly<LeaseModel>) => m.tokens[this.worker]!.length > 0;
  async run(m: LeaseModel, r: Real): Promise<void> {
    const tokens = pickTokens(m.tokens[this.worker]!, this.pick);
    const items = tokens.map((token, i) => ({ token, ...transitionOf(this.choices[i % this.choices.length]!, token) }));
    const results = await leaseFinalizeMany(r.pool, table, items.map((x) => ({ ...x.token, transition: x.transition })));
    const since = ++m.clock;
    items.forEach(({ token, transition, tooOld }, i) => {
      const holds = m.holds(token);
      expect(results[i]!.won, `finalize ${token.id}@${token.leaseVersion}`).toBe(holds);
      if (holds) {
        m.applyFinalize(token, transition, tooOld, since);
        expect(results[i]!.status).toBe(m.get(token.id).status);
      } else m.stats.staleRefused++;
    });
    await checkAgainstModel(m, r);
  }
  toString = () => `finalizeMany(${WORKERS[this.worker]}, pick=${this.pick}, ${this.choices.join(',')})`;
}

/** Moves time: the leases of some processing rows run out now (no sleeping). */
class ExpireCommand implements Cmd {
  constructor(readonly pick: number) {}
  check = (m: Readonly<LeaseModel>) => m.list().some((t) => t.status === 'processing');
  async run(m: LeaseModel, r: Real): Promise<void> {
    const rows = pickTokens(m.list().filter((t) => t.status === 'processing'), this.pick);
    const ids = rows.map((t) => t.id);
    await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 ms' WHERE id = ANY(${ids}::bigint[])`.execute(r.db);
    const since = ++m.clock;
    rows.forEach((t) => Object.assign(t, { expired: true, since }));
    await checkAgainstModel(m, r);
  }
  toString = () => `expire(pick=${this.pick})`;
}

/** Moves time: every pending row's backoff or defer delay is over. */
class MakeDueCommand implements Cmd {
  check = (m: Readonly<LeaseModel>) => m.list().some((t) => t.status === 'pending' && !t.due);
  async run(m: LeaseModel, r: Real): Promise<void> {
    await sql`UPDATE leasehold.task SET available_at = now() WHERE status = 'pending' AND available_at > now()`.execute(r.db);
    const since = ++m.clock;
    for (const t of m.list()) if (t.status === 'pending' && !t.due) Object.assign(t, { due: true, since });
    await checkAgainstModel(m, r);
  }
  toString = () => 'makeDue()';
}

/**
 * A non-empty subset of `items` chosen by the bits of `pick`. It may hold a stale and the
 * current token of one row: results are reported per token, and only the current one wins.
 */
function pickTokens<T extends { readonly id: string }>(items: readonly T[], pick: number): T[] {
  const chosen = items.filter((_, i) => (pick >> i % 16) & 1);
  return chosen.length > 0 ? chosen : [items[pick % items.length]!];
}

const worker = fc.integer({ min: 0, max: WORKERS.length - 1 });
const outcome = fc.constantFrom<OutcomeChoice>('done', 'retry-now', 'retry-later', 'defer-now', 'defer-later', 'defer-too-old', 'dead');
const names = fc.constantFrom<readonly string[] | undefined>(undefined, undefined, ['a'], ['b'], ['a', 'b']);

/** Every step, weighted towards claims and finalizes. */
export const leaseCommands: fc.Arbitrary<Cmd>[] = [
  fc.tuple(worker, fc.integer({ min: 1, max: 4 }), names).map(([w, b, n]) => new ClaimCommand(w, b, n)),
  fc.tuple(worker, fc.integer({ min: 1, max: 4 }), names).map(([w, b, n]) => new ClaimCommand(w, b, n, true)),
  fc.tuple(worker, fc.integer({ min: 1, max: 4 }), names).map(([w, b, n]) => new ClaimCommand(w, b, n, true)),
  fc.integer({ min: 1, max: 3 }).map((b) => new ConcurrentClaimCommand(b)),
  fc.constant(new ReapCommand()),
  fc.tuple(worker, fc.nat(0xffff)).map(([w, p]) => new HeartbeatCommand(w, p)),
  fc.tuple(worker, fc.nat(), outcome).map(([w, i, o]) => new FinalizeCommand(w, i, o)),
  fc.tuple(worker, fc.nat(), outcome).map(([w, i, o]) => new FinalizeCommand(w, i, o)),
  fc.tuple(worker, fc.nat(0xffff), fc.array(outcome, { minLength: 1, maxLength: 4 })).map(
    ([w, p, o]) => new FinalizeManyCommand(w, p, o),
  ),
  fc.nat(0xffff).map((p) => new ExpireCommand(p)),
  fc.nat(0xffff).map((p) => new ExpireCommand(p)),
  fc.constant(new MakeDueCommand()),
  fc.tuple(fc.nat(), fc.boolean()).map(([p, skip]) => new ResolveDeadCommand(p, skip)),
];
