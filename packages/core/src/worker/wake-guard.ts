import { toError } from '../errors.js';
import type { LeasedTable } from '../leased-table.js';
import { leaseWakeArm, leaseWakeRenew, WAKE_RENEW_MS, WAKE_TTL_MS } from '../sql/lease-wake.js';
import type { Executor } from '../sql/execute.js';
import type { Wakeup } from './wakeup.js';

/** What a {@link WakeGuard} works with; all of it belongs to its worker. */
export interface WakeGuardParts {
  readonly db: Executor;
  readonly table: LeasedTable<unknown>;
  readonly wakeup: Wakeup;
  readonly pollIntervalMs: number;
  /** Whether notifications reach the worker now (its LISTEN connection is up). */
  readonly listening: () => boolean;
  /**
   * Sends a statement on the LISTEN connection (see `Listener.run`), or returns undefined when it
   * is not up: the announcement and its renewals go where the worker's claims go, so an idle
   * worker keeps one server process busy, not two.
   */
  readonly run?: (<T>(statement: (executor: Executor) => Promise<T>) => Promise<T> | undefined) | undefined;
  readonly running: () => boolean;
  readonly onError: (error: Error) => void;
}

/** Longest wait before arming again while producers keep the wake lock, in ms. */
const BUSY_WAIT_MAX_MS = 32;

/**
 * A worker sleeps on its last announcement only while it stays live this long past the sleep's
 * first renewal (WAKE_RENEW_MS into the sleep), in ms: room for a late timer or a slow renewal.
 */
const LIVE_MARGIN_MS = 500;

/** What the claim that came back short was, for {@link WakeGuard.afterShortClaim}. */
export interface ShortClaim {
  /** When it was sent (`performance.now()`). */
  readonly sentAt: number;
  /** A whole claim (every source), not a ready-only one. */
  readonly whole: boolean;
}

/**
 * Lets a worker sleep without missing a wake-up, although producers notify only while a worker
 * may be asleep (core migration 5). Before it sleeps, the worker arms: it announces itself in
 * `<table>_wake`, then makes sure no producer is between an insert that skipped its NOTIFY and its
 * commit, then claims once more (a later statement, which sees every such producer's rows). Only
 * when that claim comes back short too does it sleep, renewing its announcement every second,
 * until a notification, a freed slot or the poll interval wakes it. While producers hold the wake
 * lock it claims again after 1, 2, 4 … 32 ms instead. Without LISTEN it polls, as before.
 *
 * An announcement made by a quiet arm stays live for WAKE_TTL_MS, and every renewal that finds it
 * live extends it: while it is, producers notify of every insert, so any whole claim sent after
 * that arm is as good a last claim as the one the arm asks for. A worker woken again and again
 * (a trickle of work) therefore sleeps after such a claim without arming again, until the
 * announcement nears its end (see {@link LIVE_MARGIN_MS}): one arm in a second or so, not one
 * per task.
 * @internal
 */
export class WakeGuard {
  readonly #p: WakeGuardParts;
  /** Armed just now: the next claim that comes back short may be followed by sleep. */
  #armed = false;
  #busyWaitMs = 1;
  /** False once the table turned out to have no wake sequence (an older schema). */
  #available = true;
  /** The last sleep ended by a wake (a notification, a freed slot), not by the poll interval. */
  #woken = false;
  /**
   * When the quiet arm that began the live announcement answered (`performance.now()`), or
   * undefined when none is known live: claims sent since then saw what producers that skipped
   * their NOTIFY wrote, and producers since then notified.
   */
  #liveSince: number | undefined;
  /** Until when that announcement is live, at least: its last setting's send time plus its TTL. */
  #liveUntil = -Infinity;

  constructor(parts: WakeGuardParts) {
    this.#p = parts;
  }

  /** Armed: the loop's next claim is the last before it sleeps, and must take every source. */
  get armed(): boolean {
    return this.#armed;
  }

  /** Whether the loop was woken from its sleep since the last call (then it claims what woke it). */
  takeWoken(): boolean {
    const woken = this.#woken;
    this.#woken = false;
    return woken;
  }

  /** The loop claimed a full batch, waited, or failed: it must arm again before it sleeps. */
  disarm(): void {
    this.#armed = false;
    this.#busyWaitMs = 1;
  }

  /** After a claim that came back short: resolves when the loop should claim again. */
  async afterShortClaim(claim: ShortClaim): Promise<void> {
    const p = this.#p;
    if (!this.#available || !p.listening()) {
      // notifications sent while the worker does not listen are lost: arm afresh once it does
      this.#liveSince = undefined;
      this.disarm();
      await p.wakeup.wait(p.pollIntervalMs);
      return;
    }
    const live = this.#liveFor(claim);
    if (this.#armed || (claim.whole && live)) {
      this.disarm();
      await this.#sleep();
      return;
    }
    if (live) {
      // a ready-only claim saw only the ready rows: the whole claim after it is the last
      this.#armed = true;
      return;
    }
    let quiet: boolean;
    const sentAt = performance.now();
    try {
      const arm = await (p.run?.((e) => leaseWakeArm(e, p.table, WAKE_TTL_MS)) ?? leaseWakeArm(p.db, p.table, WAKE_TTL_MS));
      if (arm === undefined) {
        this.#available = false; // producers of this table notify on every insert
        await p.wakeup.wait(p.pollIntervalMs);
        return;
      }
      quiet = arm.quiet;
    } catch (error) {
      this.#liveSince = undefined;
      p.onError(toError(error));
      // not announced: producers may skip their NOTIFY, so a sleep of the poll interval could
      // miss what they insert meanwhile. Claim again soon, and arm again (a claim that fails
      // backs off on its own path)
      await p.wakeup.wait(Math.min(p.pollIntervalMs, WAKE_RENEW_MS));
      return;
    }
    if (quiet) {
      this.#armed = true; // claim once more, then sleep
      this.#liveSince = performance.now();
      this.#liveUntil = sentAt + WAKE_TTL_MS;
      return;
    }
    this.#liveSince = undefined;
    // a producer that skipped its NOTIFY has yet to commit: claim again shortly
    await p.wakeup.wait(this.#busyWaitMs);
    this.#busyWaitMs = Math.min(this.#busyWaitMs * 2, BUSY_WAIT_MAX_MS);
  }

  /**
   * Whether `claim` was sent after the quiet arm of an announcement that has stayed live since,
   * and stays live past the first renewal of a sleep begun now.
   */
  #liveFor(claim: ShortClaim): boolean {
    return this.#liveSince !== undefined && claim.sentAt >= this.#liveSince && performance.now() + WAKE_RENEW_MS + LIVE_MARGIN_MS <= this.#liveUntil;
  }

  /** Sleeps until woken or the poll interval, renewing the announcement every second. */
  async #sleep(): Promise<void> {
    const p = this.#p;
    let left = p.pollIntervalMs;
    while (p.running()) {
      const slice = Math.min(left, WAKE_RENEW_MS);
      if (await p.wakeup.wait(slice)) {
        this.#woken = true;
        return;
      }
      left -= slice;
      if (left <= 0 || !p.running()) return;
      const sentAt = performance.now();
      try {
        // lapsed meanwhile (a stalled process): arm and claim again before sleeping on
        if (!(await (p.run?.((e) => leaseWakeRenew(e, p.table, WAKE_TTL_MS)) ?? leaseWakeRenew(p.db, p.table, WAKE_TTL_MS)))) {
          this.#liveSince = undefined;
          return;
        }
        // live now may be another worker's later arm: the chain holds only if ours had not run out
        if (sentAt < this.#liveUntil) this.#liveUntil = sentAt + WAKE_TTL_MS;
        else this.#liveSince = undefined;
      } catch (error) {
        this.#liveSince = undefined;
        p.onError(toError(error));
        return;
      }
    }
  }
}
