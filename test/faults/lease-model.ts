// The reference model of the lease state machine (docs/design.md §9, invariants 1, 3, 4, 5, 6):
// what every task row must look like after each step, computed without a database. The
// property test in state-machine.int.test.ts drives the real tables and this model side by side.
import { compareIds, REAP_ERROR, type Transition } from '@leasehold/core/internal';

/** A task as the model expects to find it. */
export interface ModelTask {
  readonly id: string;
  readonly name: string;
  readonly priority: number;
  readonly groupKey: string | null;
  readonly maxAttempts: number;
  /** The limit it runs under ({@link LIMIT}), or null. */
  readonly flow: string | null;
  status: 'pending' | 'processing' | 'done' | 'dead';
  attempts: number;
  leaseVersion: number;
  owner: string | null;
  /** `lease_until < now()` (only meaningful while processing). */
  expired: boolean;
  /** `available_at <= now()` (only meaningful while pending). */
  due: boolean;
  /** Pending again after a claim (a retry, a deferral, a retried dead row): the claim finds it through the due source once due. */
  scheduled: boolean;
  /** Order in which leases ran out or scheduled rows became due (the claim's other sources' order). */
  since: number;
  lastError: string | null;
}

/** A fencing token a simulated worker got from a claim, kept after it goes stale. */
export interface Token {
  readonly id: string;
  readonly leaseVersion: number;
  /** Attempts and maximum as the claim returned them (what a worker decides retries with). */
  readonly attempts: number;
  readonly maxAttempts: number;
}

/** Counters over a run, to show each interesting path was really exercised. */
export interface ModelStats {
  claimed: number;
  reclaimedAfterExpiry: number;
  reaped: number;
  finalizeWon: number;
  staleRefused: number;
  expiredFinalizeWon: number;
  heartbeatWon: number;
  heartbeatRefused: number;
  /** Rows claimed under the limit, and rows of it promoted once due. */
  limitedClaimed: number;
  promoted: number;
}

export const WORKERS = ['w0', 'w1', 'w2'] as const;

/** The one limit of the model's tasks under a limit: a global concurrency (see `concurrency`). */
export const LIMIT = 'api';

/** The reference model: tasks by id, each simulated worker's tokens, and what won already. */
export class LeaseModel {
  readonly tasks = new Map<string, ModelTask>();
  readonly tokens: Token[][] = WORKERS.map(() => []);
  /** `id:leaseVersion` of every token whose finalize won: a second win would break the fence. */
  readonly won = new Set<string>();
  readonly stats: ModelStats;
  /** How many leases of {@link LIMIT} may run at once. */
  readonly concurrency: number;

  constructor(stats: ModelStats, concurrency = 1) {
    this.stats = stats;
    this.concurrency = concurrency;
  }

  /** Tasks in id order. */
  list(): ModelTask[] {
    return [...this.tasks.values()].sort((a, b) => compareIds(a.id, b.id));
  }

  get(id: string): ModelTask {
    const task = this.tasks.get(id);
    if (!task) throw new Error(`model has no task ${id}`);
    return task;
  }

  /** What the reap step of a claim sends to dead: expired leases on their last attempt. */
  reapable(): ModelTask[] {
    return this.list().filter((t) => t.status === 'processing' && t.expired && t.attempts >= t.maxAttempts);
  }

  /** A counter for {@link ModelTask.since}. */
  clock = 0;

  /**
   * What a claim of `batch` takes, in claim order: the first `batch` rows of each of the claim's
   * three sources — due now (priority desc, id), due since it was scheduled (in the order they
   * became due, then id), expired leases with attempts left (in the order they expired, then
   * id) — then the first `batch` of those by priority desc, id. Rows under the limit are in none
   * of those sources; with `flows` the claim also takes them, within the limit (see
   * {@link admitted}). Without `batch`, every candidate.
   */
  claimable(names: readonly string[] | undefined, batch = Infinity, flows = false): ModelTask[] {
    const eligible = this.list()
      .filter((c) => names === undefined || names.includes(c.name))
      .filter((c) => this.#isHead(c));
    const main = eligible.filter((c) => c.flow === null);
    const ready = main.filter((c) => c.status === 'pending' && c.due && !c.scheduled).sort(byPriority);
    const due = main.filter((c) => c.status === 'pending' && c.due && c.scheduled).sort(bySince);
    const expired = main.filter((c) => c.status === 'processing' && c.expired && c.attempts < c.maxAttempts).sort(bySince);
    const candidates = [ready, due, expired].flatMap((source) => source.slice(0, batch));
    if (flows) candidates.push(...this.admitted(eligible, batch));
    return candidates.sort(byPriority).slice(0, batch);
  }

  /**
   * The rows under the limit a claim may take: the limit's room (its concurrency less the leases
   * running under it, at most `batch`) of the best ready rows and expired leases, when the limit
   * has any row to take at all (the claim locks the limit only then).
   */
  admitted(eligible: readonly ModelTask[], batch: number): ModelTask[] {
    const all = this.list().filter((t) => t.flow === LIMIT);
    const live = all.filter((t) => t.status === 'processing' && !t.expired).length;
    const room = Math.min(batch, this.concurrency - live);
    const active = all.some((t) => (t.status === 'pending' && !t.scheduled && this.#isHead(t)) || (t.status === 'processing' && t.expired && t.attempts < t.maxAttempts));
    if (room <= 0 || !active) return [];
    const mine = eligible.filter((t) => t.flow === LIMIT);
    const ready = mine.filter((t) => t.status === 'pending' && !t.scheduled).sort(byPriority).slice(0, room);
    const expired = mine.filter((t) => t.status === 'processing' && t.expired && t.attempts < t.maxAttempts).sort(bySince).slice(0, batch);
    return [...ready, ...expired].sort(byPriority).slice(0, room);
  }

  /** Rows under the limit that a claim serving it moves out of `scheduled` (once due). */
  promotable(batch: number): ModelTask[] {
    return this.list()
      .filter((t) => t.flow === LIMIT && t.status === 'pending' && t.scheduled && t.due && this.#isHead(t))
      .sort(bySince)
      .slice(0, batch);
  }

  /** Whether no earlier row of its group is unfinished: only a group's head is claimable. */
  #isHead(c: ModelTask): boolean {
    return c.groupKey === null || !this.list().some((p) => p.groupKey === c.groupKey && compareIds(p.id, c.id) < 0 && ['pending', 'processing', 'dead'].includes(p.status));
  }

  /** Applies a reap the database did. */
  applyReap(id: string): void {
    const t = this.get(id);
    Object.assign(t, { status: 'dead', owner: null, expired: false, lastError: REAP_ERROR });
    this.stats.reaped++;
  }

  /** Applies a claim the database did, and hands the token to `worker`. */
  applyClaim(worker: number, id: string): Token {
    const t = this.get(id);
    if (t.status === 'processing') this.stats.reclaimedAfterExpiry++;
    if (t.flow !== null) this.stats.limitedClaimed++;
    Object.assign(t, {
      status: 'processing', owner: WORKERS[worker], expired: false, scheduled: false, leaseVersion: t.leaseVersion + 1, attempts: t.attempts + 1,
    });
    const token = { id, leaseVersion: t.leaseVersion, attempts: t.attempts, maxAttempts: t.maxAttempts };
    this.tokens[worker]!.push(token);
    this.stats.claimed++;
    return token;
  }

  /** Whether the fence lets `token` change its row now: processing, same lease_version. */
  holds(token: Token): boolean {
    const t = this.get(token.id);
    return t.status === 'processing' && t.leaseVersion === token.leaseVersion;
  }

  /**
   * Applies a finalize that the fence let through. `since`: when a row due now joins the due rows
   * (one statement's rows share it: the same `now()`, so the claim orders them by id).
   */
  applyFinalize(token: Token, transition: Transition, tooOld = false, since = ++this.clock): void {
    const t = this.get(token.id);
    const key = `${token.id}:${token.leaseVersion}`;
    if (this.won.has(key)) throw new Error(`token ${key} won a second finalize`);
    this.won.add(key);
    this.stats.finalizeWon++;
    if (t.expired) this.stats.expiredFinalizeWon++;
    Object.assign(t, { owner: null, expired: false });
    switch (transition.to) {
      case 'done':
        Object.assign(t, { status: 'done', lastError: null });
        return;
      case 'dead':
        Object.assign(t, { status: 'dead', lastError: transition.error });
        return;
      case 'pending':
        if (transition.refund) t.attempts -= 1;
        if (tooOld) Object.assign(t, { status: 'dead', lastError: `defer age limit exceeded: ${transition.error}` });
        // back to pending through the scheduled rows even when due now (only INSERTs feed the
        // claim's main index, see ReadyFloor): due now, it joins them in the order it became due
        else Object.assign(t, { status: 'pending', due: transition.delayMs === 0, scheduled: true, lastError: transition.error, ...(transition.delayMs === 0 ? { since } : {}) });
    }
  }
}

function byPriority(a: ModelTask, b: ModelTask): number {
  return b.priority - a.priority || compareIds(a.id, b.id);
}

function bySince(a: ModelTask, b: ModelTask): number {
  return a.since - b.since || compareIds(a.id, b.id);
}

/** A task row as read back from the database, in the model's terms. */
export interface StoredRow {
  id: string;
  name: string;
  status: ModelTask['status'];
  attempts: number;
  max_attempts: number;
  lease_version: number;
  lease_owner: string | null;
  has_lease: boolean;
  expired: boolean;
  due: boolean;
  blocked: boolean;
  scheduled: boolean;
  group_head: string | null;
  last_error: string | null;
  done_at: string | null;
}
