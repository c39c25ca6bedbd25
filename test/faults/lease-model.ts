// The reference model of the lease state machine (../shared/DESIGN.md, invariants 1, 3, 4, 5, 6):
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
  status: 'pending' | 'processing' | 'done' | 'dead';
  attempts: number;
  leaseVersion: number;
  owner: string | null;
  /** `lease_until < now()` (only meaningful while processing). */
  expired: boolean;
  /** `available_at <= now()` (only meaningful while pending). */
  due: boolean;
  /** Pending after a delay: the claim finds it through the due-later source once due. */
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
}

export const WORKERS = ['w0', 'w1', 'w2'] as const;

/** The reference model: tasks by id, each simulated worker's tokens, and what won already. */
export class LeaseModel {
  readonly tasks = new Map<string, ModelTask>();
  readonly tokens: Token[][] = WORKERS.map(() => []);
  /** `id:leaseVersion` of every token whose finalize won: a second win would break the fence. */
  readonly won = new Set<string>();
  readonly stats: ModelStats;

  constructor(stats: ModelStats) {
    this.stats = stats;
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
   * id) — then the first `batch` of those by priority desc, id. Without `batch`, every candidate.
   */
  claimable(names: readonly string[] | undefined, batch = Infinity): ModelTask[] {
    const all = this.list();
    const candidates = all
      .filter((c) => names === undefined || names.includes(c.name))
      .filter(
        (c) =>
          c.groupKey === null ||
          !all.some((p) => p.groupKey === c.groupKey && compareIds(p.id, c.id) < 0 && ['pending', 'processing', 'dead'].includes(p.status)),
      );
    const byPriority = (a: ModelTask, b: ModelTask) => b.priority - a.priority || compareIds(a.id, b.id);
    const bySince = (a: ModelTask, b: ModelTask) => a.since - b.since || compareIds(a.id, b.id);
    const ready = candidates.filter((c) => c.status === 'pending' && c.due && !c.scheduled).sort(byPriority);
    const due = candidates.filter((c) => c.status === 'pending' && c.due && c.scheduled).sort(bySince);
    const expired = candidates.filter((c) => c.status === 'processing' && c.expired && c.attempts < c.maxAttempts).sort(bySince);
    return [ready, due, expired].flatMap((source) => source.slice(0, batch)).sort(byPriority).slice(0, batch);
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

  /** Applies a finalize that the fence let through. */
  applyFinalize(token: Token, transition: Transition, tooOld = false): void {
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
        else Object.assign(t, { status: 'pending', due: transition.delayMs === 0, scheduled: transition.delayMs > 0, lastError: transition.error });
    }
  }
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
