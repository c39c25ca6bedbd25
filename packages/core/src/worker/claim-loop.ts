import type { EventEmitter } from 'eventemitter3';
import { toError } from '../errors.js';
import type { Executor } from '../sql/execute.js';
import { leaseClaim, type LeaseClaimResult } from '../sql/lease-claim.js';
import { readyFloorProbe } from '../sql/ready-floor-probe.js';
import { limitFloorProbe } from '../sql/limit-floor-probe.js';
import { dueFloorProbe } from '../sql/due-floor-probe.js';
import type { Claimed } from '../sql/lease-row.js';
import type { ClaimSizing } from './claim-sizing.js';
import { safeEmit, type WorkerEventMap } from './events.js';
import type { NormalizedLeaseWorkerOptions } from './lease-worker-options.js';
import type { TaskRunner } from './task-runner.js';
import type { TrackedPool } from './tracked-pool.js';
import type { WakeGuard } from './wake-guard.js';
import { LimitFloors, PriorityFloors } from './limit-floors.js';
import { DueFloors } from './due-floors.js';
import { ProbeSpacing } from './probe-spacing.js';
import { CLAIM_AHEAD_MS, type TimedWake } from './timed-wake.js';
import type { Wakeup } from './wakeup.js';
import type { WorkerLog } from './worker-log.js';

/** What a {@link claimLoop} works with; all of it belongs to its worker. */
export interface ClaimLoopParts<Row> {
  readonly options: NormalizedLeaseWorkerOptions<Row>;
  readonly db: TrackedPool;
  readonly runner: TaskRunner<Row>;
  readonly sizing: ClaimSizing;
  /** Decides, after a claim that came back short, between claiming again and sleeping. */
  readonly guard: WakeGuard;
  /**
   * The LISTEN connection (see `Listener.run`), for the claim that answers a wake-up; undefined
   * when the worker does not listen.
   */
  readonly listener?: { run<T>(statement: (executor: Executor) => Promise<T>): Promise<T> | undefined } | undefined;
  /** Woken by notifications, freed slots (see the worker's wiring), finished writes and stop. */
  readonly wakeup: Wakeup;
  /**
   * Wakes the loop when something comes due that no notification announces (a rate window, a
   * scheduled row, a retry, a parked run): armed from what the whole claims report, and by the
   * worker's own writes of retries and parks.
   */
  readonly timer: TimedWake;
  readonly log: WorkerLog;
  readonly emitter: EventEmitter<WorkerEventMap<Row>>;
  /** The limits its claims take rows under (recorded at start; see `limitRegisterMany`). */
  readonly flows: () => readonly string[] | undefined;
  /** The loop runs while this is true. */
  readonly running: () => boolean;
  readonly onError: (error: Error) => void;
}

/**
 * Longest time after a whole claim during which the loop may send ready-only claims (see
 * `LeaseClaimInput.readyOnly`), in ms, or the poll interval if shorter (so the first claim after
 * a poll is always whole). It bounds how long a busy worker leaves rows that only the whole claim
 * takes: scheduled rows that came due (retries, delays), expired leases of crashed workers, tasks
 * to reap, and parked tasks to wake by time.
 */
const WHOLE_CLAIM_EVERY_MS = 100;

/**
 * How often a busy worker's whole claims also take expired leases and reap, in ms (a quarter of
 * the poll interval if that is shorter; a sleeping worker looks at its polls): a crashed
 * worker's tasks start again within their lease plus this. Not in every claim: while a long
 * transaction elsewhere holds vacuum back, the leases' index keeps an entry for every lease
 * that ended since, and a look reads those in its range.
 */
const EXPIRED_EVERY_MS = 500;

/**
 * A look for expired leases reads only the leases that ran out since the previous successful
 * one, plus this margin (ms) for a statement that reached the server late or a row another
 * transaction held locked then; every {@link EXPIRED_FULL_EVERY_MS}, and after a look that took
 * longer than the margin, it reads them all.
 */
const EXPIRED_MARGIN_MS = 5_000;
const EXPIRED_FULL_EVERY_MS = 60_000;

/**
 * How long an INSERT may take to commit after taking its id, in ms, and still never be passed by
 * the ready floors (see `ReadyFloor`); later ones wait for the floors' probe.
 */
const READY_FLOOR_WINDOW_MS = 1_000;

/**
 * After a claim that came back short, when the timer fires within this many ms the loop waits
 * for it instead of arming (see WakeGuard): a row a producer inserted meanwhile without a
 * NOTIFY waits at most this long for the timer's whole claim.
 */
const DUE_SOON_MS = 20;

/**
 * Claims while the worker runs: as much as `sizing` says its slots and buffer can take. When its
 * slots and buffer are full it waits for a freed slot that wants a refill or a finished write;
 * when a claim comes back short, `guard` decides between claiming again and sleeping until a
 * notification, a freed slot or the poll interval. Backs off (with jitter) while the database does not answer. Resolves once
 * the worker stops running.
 * @internal
 */
export async function claimLoop<Row>(parts: ClaimLoopParts<Row>): Promise<void> {
  try {
    await claimWhileRunning(parts);
  } finally {
    parts.timer.clear();
  }
}

async function claimWhileRunning<Row>(parts: ClaimLoopParts<Row>): Promise<void> {
  const { options: o, runner, wakeup, emitter, timer } = parts;
  let failures = 0;
  let idle = false;
  let wholeAt = -Infinity;
  const wholeEveryMs = Math.min(WHOLE_CLAIM_EVERY_MS, o.pollIntervalMs);
  let expiredAt = -Infinity;
  // when the previous successful look for expired leases that took all it found was sent (every
  // lease that ran out before it, less the margin, was taken), and the last one from the start
  let expiredLookedAt: number | undefined;
  let expiredFullAt = -Infinity;
  const expiredEveryMs = Math.min(EXPIRED_EVERY_MS, o.pollIntervalMs / 4);
  // the probe's bound is the poll interval's: what only a poll would have found before
  const floor = new PriorityFloors(READY_FLOOR_WINDOW_MS, o.pollIntervalMs);
  // the same for the ready rows of each limit served (its own index, task_flow_ready)
  const limitFloors = new LimitFloors(READY_FLOOR_WINDOW_MS, o.pollIntervalMs);
  const dueFloors = new DueFloors(o.pollIntervalMs);
  let probing = false;
  let limitProbing = false;
  let dueProbing = false;
  // each kind of probe reads its index from the start: spaced by its own cost (ProbeSpacing)
  const readySpacing = new ProbeSpacing();
  const limitSpacing = new ProbeSpacing();
  const dueSpacing = new ProbeSpacing();
  // the previous whole claim woke parked runs: the next claim takes them (as due rows)
  let wholeNext = false;
  // the previous look for expired leases found a full batch: the next claim looks again, so a
  // crashed worker's many leases are taken over at the pace of claims, not one batch a cadence
  // (or, for a worker that sleeps in between, one batch a poll interval)
  let expiredLeft = false;
  // when (performance.now()) the earliest lease a look saw running out does: the claim after it
  // looks for expired leases, whatever the cadence, and a sleeping worker wakes for it
  let expiredDueAt = Infinity;
  // Claims under limits leave out the lists' part while every served limit is kept in stripes
  // (LeaseClaimInput.stripedOnly). The first claim that finds rows under a limit kept in its list
  // says so, and every claim after it is whole: a limit's kind changes only at a worker's start,
  // and a worker with a small, keyed or rated limit would otherwise send two claims each time
  // that limit's rows came back after a lull
  let stripedOnly = true;
  const probe = () => {
    probing = true;
    const sent = performance.now();
    readyFloorProbe(parts.db, o.table, { names: o.names, versions: o.versions, priorities: floor.keys() })
      .then((first) => {
        // a row the floor had passed: claim it now rather than at the next poll
        if (floor.probed(sent, performance.now(), first)) wakeup.wake();
      })
      // a failed probe changes nothing: the next one tries again, and the claims report the outage
      .catch(() => undefined)
      .finally(() => {
        probing = false;
        readySpacing.ran(sent, performance.now());
      });
  };
  const probeLimits = (flows: readonly string[]) => {
    limitProbing = true;
    const sent = performance.now();
    limitFloorProbe(parts.db, o.table, { flows, names: o.names, versions: o.versions })
      .then((first) => {
        if (limitFloors.probed(sent, performance.now(), first)) wakeup.wake();
      })
      .catch(() => undefined)
      .finally(() => {
        limitProbing = false;
        limitSpacing.ran(sent, performance.now());
      });
  };
  const probeDueFloors = () => {
    dueProbing = true;
    const sent = performance.now();
    dueFloorProbe(parts.db, o.table, { names: o.names, versions: o.versions })
      .then((first) => {
        // a row due that the claims had passed: the next claim (a whole one) takes it
        if (dueFloors.probed(sent, performance.now(), first)) {
          wholeNext = true;
          wakeup.wake();
        }
      })
      .catch(() => undefined)
      .finally(() => {
        dueProbing = false;
        dueSpacing.ran(sent, performance.now());
      });
  };
  while (parts.running()) {
    const want = parts.sizing.want(runner);
    if (want === 0) {
      // slots and buffer are full: a freed slot or a finished write wakes the loop
      parts.guard.disarm();
      await wakeup.wait(o.pollIntervalMs);
      continue;
    }
    let claimed: Claimed<Row>[];
    let promoted: number;
    let limitedIds: readonly string[] | null;
    let ahead: ReadonlyMap<string, number> | null;
    // a claim that left out a limit kept in its list: claim again at once, the whole way
    let listedLeft = false;
    // Rows under limits compete with the rest for the whole claim, by priority and age, whatever
    // the buffer holds: the runner starts them ahead of it, at the next free slot. (Offered only
    // for slots free of the buffer, they were never claimed while steady unlimited work kept it
    // full: 8/s of a 50/s rate, issue 32.)
    const flowBatch = want;
    const flows = parts.flows();
    // On the path from a notification to a handler, only the rows a notification announces: a
    // ready-only claim is the shorter statement (about 0.15 ms of a 1.2 ms wake-to-start here).
    // The other sources come with the next whole claim: the one before sleeping (the guard's
    // armed claim must see everything a producer that skipped its NOTIFY wrote), the first after
    // a poll, and at least one every wholeEveryMs while busy.
    const woken = parts.guard.takeWoken();
    // something came due (the timer fired) or was just woken: only the whole claim takes it
    const due: boolean = timer.take() || wholeNext;
    wholeNext = false;
    const leaseDue = performance.now() >= expiredDueAt;
    const readyOnly: boolean = (flows === undefined || flows.length === 0) && !parts.guard.armed && !due && !expiredLeft && !leaseDue && (woken || performance.now() - wholeAt < wholeEveryMs);
    if (!readyOnly) wholeAt = performance.now();
    const sentAt = performance.now();
    // a wake that came before this claim is answered by it: it must not cause another (a timer
    // that fired while the loop armed, say, would be followed by a ready-only claim, an arm and a
    // whole claim, all for nothing). A wake during the claim is still remembered.
    wakeup.clear();
    const expired: boolean = !readyOnly && (expiredLeft || leaseDue || sentAt - expiredAt >= expiredEveryMs);
    let expiredWithinMs: number | undefined;
    // as they were before this claim: a claim that fails looked at nothing (see the catch below)
    const expiredAtBefore = expiredAt;
    const expiredFullAtBefore = expiredFullAt;
    if (expired) {
      expiredAt = sentAt;
      if (expiredLookedAt === undefined || sentAt - expiredFullAt >= EXPIRED_FULL_EVERY_MS) expiredFullAt = sentAt;
      else expiredWithinMs = sentAt - expiredLookedAt + EXPIRED_MARGIN_MS;
    }
    // this worker's writes that finish a group's row may unblock the next one, with any id: the
    // claims after such a write start at or below the lowest it unblocked. Only once it has
    // ended: a claim sent before it committed cannot see what it unblocks, and an empty claim
    // sent while it was under way is followed by another (below). Every write that finished a
    // grouped row, and every claim while one was under way, sent them back to the index's start,
    // through each entry a long transaction elsewhere keeps there: a busy group that empties
    // after each row (a message at a time) read them all at every claim
    const unblockedFrom = runner.takeUnblockedFrom();
    if (unblockedFrom !== undefined) {
      floor.lowerTo(performance.now(), unblockedFrom);
      limitFloors.reset(performance.now());
      // a group's next row may be a scheduled one, with a due time long past
      dueFloors.reset(performance.now());
    }
    // A worker with nothing to do starts its claims at the index's beginning when the floor's
    // probe is due, instead of probing beside them: an idle worker sends no more statements
    // than one without a floor. A busy one probes beside its claims (below), off their path.
    // (its own probe's spacing too: from the start, this claim reads what a probe reads)
    const floorless = !readyOnly && idle && readySpacing.allowed() && floor.probeDue();
    const readyFloors = floorless ? undefined : floor.entries();
    const limited = flows !== undefined && flows.length > 0;
    const limitsFromStart = limited && idle && limitSpacing.allowed() && limitFloors.probeDue();
    const flowFloors = !limited ? undefined : limitsFromStart ? undefined : limitFloors.floors(flows);
    const dueFromStart = !readyOnly && idle && dueSpacing.allowed() && dueFloors.probeDue();
    const dueFloorsNow = readyOnly || dueFromStart ? undefined : dueFloors.entries();
    const claim = (executor: Executor): Promise<LeaseClaimResult<Row>> =>
      leaseClaim(executor, o.table, {
        owner: o.owner,
        batch: want,
        leaseMs: o.settings.leaseMs,
        names: o.names,
        versions: o.versions,
        leaseMsByName: o.leaseMsByName,
        flows,
        flowBatch,
        stripedOnly,
        readyOnly,
        readyFloors,
        flowFloors,
        expired,
        expiredWithinMs,
        // what comes due before the next poll: a timer for it (what comes later, the poll finds)
        dueWithinMs: o.pollIntervalMs,
        aheadMs: CLAIM_AHEAD_MS,
        dueFloors: dueFloorsNow,
      });
    // a claim sent while a write of a group's head is under way cannot see the group's next head
    const settlingAtClaim = runner.settling;
    // nor one sent while such a head still runs: its write may commit before this claim answers
    const inFlightAtClaim = runner.inFlight;
    try {
      // on the LISTEN connection while it is up (Listener.run): the answer to a wake-up goes out
      // on the connection that just delivered it, and every claim on one connection reuses the
      // plans made there (on the pool, each connection planned each claim afresh five times)
      const result = await (parts.listener?.run(claim) ?? claim(parts.db));
      failures = 0;
      if (expired) {
        // a look that reached the server later than the margin allows may have left a gap
        if (performance.now() - sentAt > EXPIRED_MARGIN_MS) expiredLookedAt = undefined;
        // A look that found a full batch left leases behind that may have run out long before it
        // (every worker was down, or the backlog outlasts the margin): the next looks start where
        // this one did, or they would pass over those until the minute's full look
        else if (!result.expiredLeft) expiredLookedAt = sentAt;
      }
      if (result.readyFirst !== null) floor.saw(sentAt, performance.now(), result.readyFirst);
      if (result.flowFirst !== null) limitFloors.saw(sentAt, performance.now(), result.flowFirst);
      // rows under limits that came due are back among their ready rows with their old ids
      if (result.promoted > 0) limitFloors.reset(performance.now());
      if (result.dueFirst !== null) dueFloors.saw(sentAt, performance.now(), result.dueFirst);
      if (floorless) readySpacing.ran(sentAt, performance.now());
      if (limitsFromStart) limitSpacing.ran(sentAt, performance.now());
      if (dueFromStart) dueSpacing.ran(sentAt, performance.now());
      if (!probing && !idle && readySpacing.allowed() && floor.probeDue()) probe();
      if (!dueProbing && !idle && !readyOnly && dueSpacing.allowed() && dueFloors.probeDue()) probeDueFloors();
      if (limited && !limitProbing && !idle && limitSpacing.allowed() && limitFloors.probeDue()) probeLimits(flows);
      parts.log.reachable();
      for (const reaped of result.reaped) safeEmit(emitter, 'task:reaped', reaped);
      claimed = result.claimed;
      promoted = result.promoted;
      listedLeft = stripedOnly && result.listed;
      if (result.listed) stripedOnly = false;
      limitedIds = result.limitedIds;
      ahead = result.ahead;
      if (expired) {
        // A striped-only claim takes no expired lease under a limit kept in its list: the whole
        // claim it asks for looks for expired leases too, as the limits' are looked for only then
        expiredLeft = result.expiredLeft || listedLeft;
        // counted from the claim's now(), about when it went out, as the next due time is
        expiredDueAt = result.leaseDueMs === null ? Infinity : sentAt + result.leaseDueMs;
        if (result.leaseDueMs !== null) timer.in(result.leaseDueMs - (performance.now() - sentAt));
      }
      if (result.waitMs !== null) timer.in(result.waitMs);
      if (result.nextDueMs !== null) {
        if (result.nextDueMs === 0) wholeNext = true;
        // counted from the claim's now(), about when it went out, not from its answer
        else timer.dueIn(result.nextDueMs, performance.now() - sentAt);
      }
    } catch (error) {
      parts.onError(toError(error));
      parts.guard.disarm();
      if (!parts.running()) break;
      failures++;
      // The claim after the back-off looks at what the failed one was to: every source of a whole
      // claim (what made this one whole, a fired timer say, is spent), and the expired leases when
      // it was their turn, or a worker that sleeps after the claims that follow would learn of a
      // lease about to run out only at its poll
      if (expired) {
        expiredAt = expiredAtBefore;
        expiredFullAt = expiredFullAtBefore;
      }
      wholeNext ||= !readyOnly;
      // back off (with jitter) while the database is unreachable, then try again
      await wakeup.wait(Math.min(o.pollIntervalMs, 50 * 2 ** failures) * (0.5 + Math.random() / 2));
      continue;
    }
    if (claimed.length > 0) idle = false;
    runner.acceptAll(claimed, limitedIds, ahead);
    // a full batch, or rows that just became claimable (limited rows due, parked runs woken)
    if (claimed.length === want || promoted > 0 || wholeNext || expiredLeft || listedLeft) {
      parts.guard.disarm();
      continue; // there may be more waiting
    }
    // An empty claim sent while a write of a group's head was under way could not see the next
    // head, so it says nothing of idleness; when those writes ended during it, claim once more
    if (claimed.length === 0 && settlingAtClaim > 0 && runner.settling === 0) continue;
    // Idle only after an empty claim sent with nothing in flight: one sent while a task of an
    // ordering group ran came back empty after that task's write had unblocked the next head
    // (head-handoff.int.test.ts, once in CI); the claim after it, armed or not, decides
    if (claimed.length === 0 && runner.inFlight === 0 && inFlightAtClaim === 0 && settlingAtClaim === 0 && !idle) {
      idle = true;
      safeEmit(emitter, 'worker:idle', { owner: o.owner });
    }
    if (runner.settling > 0) {
      // The next heads of this worker's ordering groups appear as its writes of their current
      // heads commit, and each such write wakes the loop: wait for it. Arming now would find our
      // own write holding the wake lock and claim again every few ms, with nothing new to take
      // (an ordered outbox drain sent 154 arms and 173 claims for 20,000 messages).
      parts.guard.disarm();
      await wakeup.wait(o.pollIntervalMs);
      continue;
    }
    if (flows !== undefined && flows.length > 0 && runner.writing > 0) {
      // A limit's slots free as writes commit, this worker's own among them, and each of its
      // writes wakes the loop: claim again then. Arming now would cost an announcement and a
      // claim that a limit these writes hold full finds nothing for; so would the wake of each
      // handler slot freed meanwhile (a refill): wait past those, for a write, the timer or the
      // poll (on a binding concurrency limit on two workers, two of every three claims were empty)
      parts.guard.disarm();
      const written = runner.written;
      const until = performance.now() + o.pollIntervalMs;
      while (parts.running() && runner.written === written && runner.writing > 0 && !timer.within(0)) {
        if (!(await wakeup.wait(until - performance.now()))) break;
      }
      continue;
    }
    if (timer.within(DUE_SOON_MS)) {
      // Something comes due within a few ms (the next group of parked runs, or the rows this
      // claim reached a little early): claim again when the timer fires, a whole claim, rather
      // than arm first. Arming is a round trip, and the timer's claim waited for it; what a
      // producer that skipped its NOTIFY wrote meanwhile is taken by that claim all the same.
      parts.guard.disarm();
      await wakeup.wait(o.pollIntervalMs);
      continue;
    }
    // the queue is drained as far as this claim saw: claim again, or sleep until woken
    await parts.guard.afterShortClaim({ sentAt, whole: !readyOnly });
  }
}
