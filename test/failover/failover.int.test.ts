// Failover (docs/operations.md, "Failover"): a private primary and a streaming standby, the
// application in front of them through a TCP proxy. While a core worker (with a cron schedule),
// two outbox dispatchers (one polling every second, one only once an hour, so that only its
// LISTEN connection wakes it) and waitForResult callers run and producers enqueue a stream of
// tasks and messages, the primary crashes (immediate shutdown), the standby is promoted two seconds later,
// and the proxy is switched to it. Nothing is restarted: every component finds the new primary by
// itself within the bound its settings give.
//
// Synchronous replication: nothing acknowledged is lost, and no task whose `done` was
// acknowledged runs again. Asynchronous replication (the standby's WAL is held back for a moment
// before the crash): what the primary acknowledged meanwhile is lost with it; the tasks whose
// `done` was lost run again (at-least-once, fenced). Either way every task and message on the
// surviving server ends done, and its `done` was accepted once: a trigger records each `done`
// transition in the transaction that writes it, so its log holds exactly what survived.
//
// Every task and message carries a number `n` of its own: after an asynchronous failover the
// promoted server may issue a lost row's id again, so ids alone do not say which row is which.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorker, defineSchedule, defineTask, enqueue, enqueueMany, migrate, scheduleSetPaused, TaskNotFoundError, waitForResult } from '@leasehold/core';
import { createDispatcher, createOutbox, migrate as migrateOutbox, type OutboxMessage } from '@leasehold/outbox';
import { query, startCluster, until, type Cluster } from './cluster.js';

// The settings the recovery bound is derived from (docs/operations.md, "Failover").
/** The worker polls this often; its claims retry with backoff capped at it while the database is away. */
const WORKER_POLL_MS = 1_000;
/** Tasks' and messages' lease: a task whose finalize could not be written runs again after it. */
const LEASE_MS = 4_000;
/** Core's LISTEN connections reconnect with backoff capped at 10 s (worker, dispatcher, waitForResult). */
const LISTEN_RECONNECT_CAP_MS = 10_000;
/** The scheduler retries a failed tick with backoff capped at 30 s. */
const SCHEDULER_RETRY_CAP_MS = 30_000;
/** The failover manager's detection time: the database is unreachable this long before the promotion. */
const DETECT_MS = 2_000;
/** After the switch, claims, LISTEN and waits work again within this. */
const RECOVERY_BOUND_MS = LISTEN_RECONNECT_CAP_MS + WORKER_POLL_MS;
/** …and whatever was in flight at the crash has ended within this (a lost finalize waits for its lease). */
const SETTLE_BOUND_MS = RECOVERY_BOUND_MS + LEASE_MS + 10_000;

/**
 * The operator's steps after promoting an asynchronous standby, before the application writes
 * (docs/operations.md, "Failover"): every leasehold sequence, and the fencing token of every
 * unfinished row, move past what the old primary may have issued in the WAL the standby never
 * received, so no id and no token is ever issued twice.
 */
const AFTER_ASYNC_PROMOTION = [
  `SELECT setval(format('%I.%I', schemaname, sequencename), coalesce(last_value, 0) + 1000000)
   FROM pg_sequences WHERE schemaname = 'leasehold' AND sequencename NOT LIKE '%\\_wake'`,
  `UPDATE leasehold.task SET lease_version = lease_version + 1000000 WHERE status IN ('pending', 'processing', 'waiting')`,
  `UPDATE leasehold.outbox SET lease_version = lease_version + 1000000 WHERE status IN ('pending', 'processing')`,
];

describe.each([{ mode: 'synchronous' as const }, { mode: 'asynchronous' as const }])('failover with $mode replication', ({ mode }) => {
  let cluster: Cluster | undefined;

  beforeAll(async () => {
    cluster = await startCluster({ synchronous: mode === 'synchronous' });
    // the schema through the public API, on the primary, through the proxy as an application would
    const pool = new pg.Pool({ connectionString: cluster.url, max: 2 });
    try {
      await migrate(pool);
      await migrateOutbox(pool);
      await installDoneLog(pool);
    } finally {
      await pool.end();
    }
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  test('worker, dispatcher, schedule and waitForResult recover without a restart; no done is accepted twice', async () => {
    const c = cluster!;
    const run = await runThroughFailover(c, mode);
    const end = await readEnd(c.url);

    // every task and message on the promoted server ended done, and its done was accepted once,
    // by the fencing token of its last claim
    expect(end.unfinished, c.logs()).toEqual([]);
    expect(end.doneTwice).toEqual([]);
    expect(end.doneLogMismatch).toEqual([]);

    // a row that is there is the one acknowledged (no id was issued twice)
    for (const [n, { id }] of run.enqueued) if (end.byId.has(id)) expect(end.byId.get(id), `task ${id}`).toBe(`failover-work ${n}`);
    for (const [n, { id }] of run.added) if (end.byId.has(`m${id}`)) expect(end.byId.get(`m${id}`), `message ${id}`).toBe(`message ${n}`);
    const lostEnqueues = [...run.enqueued.keys()].filter((n) => !end.work.has(n));
    const lostAdds = [...run.added.keys()].filter((n) => !end.messages.has(n));
    // a task whose done the worker saw written before the crash, and that ran again after it: its
    // done was lost with the old primary (the promoted server has the rerun's, by its token)
    const lostDones = [...run.doneBeforeCrash.keys()].filter((n) => run.runs.get(n)!.some((r) => r.at > run.crashedAt));
    for (const [n, version] of run.doneBeforeCrash) {
      if (!end.work.has(n)) continue; // lost with its enqueue (asynchronous)
      const accepted = end.work.get(n)!.doneVersion;
      if (lostDones.includes(n)) expect(run.runs.get(n)!.some((r) => r.at > run.crashedAt && r.version === accepted), `task n=${n}: the rerun's done`).toBe(true);
      else expect(accepted, `task n=${n}: its acknowledged done survived`).toBe(version);
    }
    // a fencing token is never handed out twice for one task, not even across the failover
    for (const [n, list] of run.runs) expect(new Set(list.map((r) => r.version)).size, `task n=${n}: tokens ${list.map((r) => r.version).join(', ')}`).toBe(list.length);

    if (mode === 'synchronous') {
      // nothing the primary acknowledged is lost: every enqueue, add and done survived, and no
      // task whose done was acknowledged ran again
      expect(lostEnqueues).toEqual([]);
      expect(lostAdds).toEqual([]);
      expect(lostDones).toEqual([]);
      expect(run.succeededTwice).toEqual([]);
    } else {
      // what was acknowledged before the standby's WAL was held back is there; what came after may not be
      expect(lostEnqueues.filter((n) => run.enqueued.get(n)!.at < run.caughtUpAt!)).toEqual([]);
      expect(lostAdds.filter((n) => run.added.get(n)!.at < run.caughtUpAt!)).toEqual([]);
      // dones were written while it was held back: they were lost, and those tasks ran again
      expect(lostDones.length).toBeGreaterThan(0);
    }
    // every message acknowledged (and still there) was published, at least once
    for (const n of run.added.keys()) if (end.messages.has(n)) expect(run.published.get(n) ?? 0, `message n=${n}`).toBeGreaterThan(0);

    // waitForResult: every wait whose task is there ended with its result; a wait whose task was
    // lost with the old primary (asynchronous only) ended with TaskNotFoundError, or with the
    // result the old primary had before the crash
    expect(run.waits.length).toBeGreaterThan(0);
    for (const w of run.waits) {
      const expected = end.echo.has(w.n) ? 'result' : w.settledAt < run.crashedAt && w.outcome === 'result' ? 'result' : 'not-found';
      expect(w.outcome, `wait for task n=${w.n}`).toBe(expected);
    }
    expect(run.waitedWhileDown, 'a waitForResult called while the database was unreachable').toBe('result');

    // the schedule fired every second from its first tick to its last, once each, also after the failover
    expect(end.ticks.duplicates).toEqual([]);
    expect(end.ticks.gaps).toEqual([]);
    expect(end.ticks.last).toBeGreaterThan(run.crashedAtWall);

    const r = run.recovery;
    console.log(
      `failover (${mode}): tasks=${end.work.size} messages=${end.messages.size} waits=${run.waits.length} ` +
        `lostEnqueues=${lostEnqueues.length} lostAdds=${lostAdds.length} lostDones=${lostDones.length} ranAgain=${run.ranAgain} ` +
        `outage=${run.outageMs}ms; after the switch (ms): worker claims=${r.worker} dispatcher claims=${r.dispatcher} ` +
        `waitForResult=${r.wait} schedule=${r.schedule} all settled=${r.settled}; hourly dispatcher woken by LISTEN in ${r.listen} ms`,
    );
  }, 80_000);
});

interface Run {
  /** Acknowledged enqueues of work tasks, by n. */
  enqueued: Map<number, { id: string; at: number }>;
  /** Acknowledged outbox adds, by n. */
  added: Map<number, { id: string; at: number }>;
  /** Publishes per message n. */
  published: Map<number, number>;
  /** Every run of a work task's handler, by n: when it started, under which fencing token. */
  runs: Map<number, { at: number; version: number }[]>;
  /** Work tasks whose fenced done the worker saw written before the crash, with the claim's fencing token. */
  doneBeforeCrash: Map<number, number>;
  /** Work tasks whose fenced done the worker saw written twice. */
  succeededTwice: number[];
  ranAgain: number;
  waits: { n: number; outcome: string; settledAt: number }[];
  waitedWhileDown: string | undefined;
  /** When the standby was last known to have every acknowledged commit (asynchronous). */
  caughtUpAt: number | undefined;
  crashedAt: number;
  crashedAtWall: number;
  outageMs: number;
  recovery: Record<'worker' | 'dispatcher' | 'schedule' | 'wait' | 'listen' | 'settled', number>;
}

/** Runs the components and producers, fails over mid-run, and waits until everything settled. */
async function runThroughFailover(c: Cluster, mode: 'synchronous' | 'asynchronous'): Promise<Run> {
  const pool = new pg.Pool({ connectionString: c.url, max: 12, connectionTimeoutMillis: 5_000 });
  pool.on('error', () => undefined); // idle connections cut by the crash
  const now = () => performance.now();
  let switchedAt = Infinity;

  const runs = new Map<number, { at: number; version: number }[]>();
  const work = defineTask<{ n: number }>('failover-work', {
    lease: `${LEASE_MS}ms`,
    handler: async ({ n }, ctx) => {
      runs.set(n, [...(runs.get(n) ?? []), { at: now(), version: ctx.task.leaseVersion }]);
      await sleep(5 + Math.random() * 20);
    },
  });
  const echo = defineTask<{ n: number }, unknown, { n: number }>('failover-echo', { lease: `${LEASE_MS}ms`, handler: ({ n }) => ({ n }) });
  // each tick's run: when it ran, and the wall-clock time of the slot it was fired for
  const tickRuns: { at: number; slot: number }[] = [];
  const tick = defineTask<{ at: string }>('failover-tick', {
    lease: `${LEASE_MS}ms`,
    handler: ({ at }) => void tickRuns.push({ at: now(), slot: Date.parse(at) }),
  });
  const everySecond = defineSchedule('failover-every-second', tick, { cron: '* * * * * *', catchUp: 60, payload: (at) => ({ at: at.toISOString() }) });
  const worker = createWorker({ pool, tasks: [work, echo, tick], schedules: [everySecond], pollInterval: `${WORKER_POLL_MS}ms`, concurrency: 8, logger: null });

  const published = new Map<number, number>();
  const publishedAt = new Map<number, number>();
  const publisher = {
    publish: async (message: OutboxMessage) => {
      const { n } = message.payload as { n: number };
      published.set(n, (published.get(n) ?? 0) + 1);
      publishedAt.set(n, now());
      await sleep(Math.random() * 5);
    },
  };
  const dispatcherOptions = { pool, publisher, lease: `${LEASE_MS}ms`, publishTimeout: '1s', logger: null } as const;
  const dispatcher = createDispatcher({ ...dispatcherOptions, eventTypes: ['OrderPlaced'], pollInterval: `${WORKER_POLL_MS}ms`, concurrency: 4 });
  // a second dispatcher, for probes only, polls once an hour: once it sleeps, only its LISTEN
  // connection wakes it. Its log says when a claim of its got through after the outage.
  const availableAgain: number[] = [];
  const listening = createDispatcher({
    ...dispatcherOptions,
    eventTypes: ['ListenProbe'],
    pollInterval: '1h',
    concurrency: 1,
    retention: false,
    logger: {
      error: () => undefined,
      warn: () => undefined,
      info: (message: string) => void (message.includes('database available again') && availableAgain.push(now())),
    },
  });
  const outbox = createOutbox();

  const succeeded = new Map<number, { at: number; version: number }[]>();
  worker.on('task:succeeded', ({ task }) => {
    if (task.name !== 'failover-work') return;
    const { n } = task.payload as { n: number };
    succeeded.set(n, [...(succeeded.get(n) ?? []), { at: now(), version: task.leaseVersion }]);
  });
  let workerClaimedAt = Infinity;
  let dispatcherClaimedAt = Infinity;
  worker.on('task:claimed', () => void (now() >= switchedAt && (workerClaimedAt = Math.min(workerClaimedAt, now()))));
  dispatcher.on('task:claimed', () => void (now() >= switchedAt && (dispatcherClaimedAt = Math.min(dispatcherClaimedAt, now()))));

  await worker.start();
  await dispatcher.start();
  await listening.start();

  // the producers, as an application's: a statement that fails is given up, and they go on
  let producing = true;
  let next = 0;
  const enqueued = new Map<number, { id: string; at: number }>();
  const added = new Map<number, { id: string; at: number }>();
  const waits: { n: number; outcome: string; settledAt: number }[] = [];
  const producers = [
    (async () => {
      while (producing) {
        const n = next++;
        await enqueue(pool, work, { n }).then((ref) => enqueued.set(n, { id: ref.id, at: now() }), () => undefined);
        await sleep(10);
      }
    })(),
    (async () => {
      while (producing) {
        const n = next++;
        await outbox
          .add(pool, { aggregateType: 'order', aggregateId: String(n), eventType: 'OrderPlaced', payload: { n } })
          .then((id) => added.set(n, { id, at: now() }), () => undefined);
        await sleep(15);
      }
    })(),
    // callers that wait for each task's result
    ...[1, 2, 3].map(async () => {
      while (producing) {
        const n = next++;
        const ref = await enqueue(pool, echo, { n }).catch(() => undefined);
        if (ref === undefined) {
          await sleep(50);
          continue;
        }
        const outcome = await waitForResult(pool, ref, { timeout: `${SETTLE_BOUND_MS}ms` }).then(
          (result) => (result.n === n ? 'result' : `wrong result ${result.n}`),
          (error: Error) => (error instanceof TaskNotFoundError ? 'not-found' : `error: ${error.message}`),
        );
        waits.push({ n, outcome, settledAt: now() });
      }
    }),
  ];

  // a first stretch of work, then the failover
  await until(() => enqueued.size >= 100 && succeeded.size >= 50 && waits.length >= 10 && tickRuns.length >= 1, 'a first stretch of work', 30_000);
  let caughtUpAt: number | undefined;
  if (mode === 'asynchronous') {
    // a burst the standby receives, due only once it is held back: the dones of it are lost
    const burst = Array.from({ length: 40 }, () => next++);
    const inserted = await enqueueMany(pool, work, burst.map((n) => ({ payload: { n }, delay: '1s' })));
    burst.forEach((n, i) => enqueued.set(n, { id: inserted[i]!.id, at: now() }));
    caughtUpAt = now();
    await c.freezeReplication();
    // the dones written from now on (and whatever else commits) reach the primary only
    const frozenAt = now();
    await until(() => burst.filter((n) => succeeded.get(n)?.some((d) => d.at > frozenAt)).length >= 10, 'dones while the standby is held back', 10_000);
  }
  const crashedAtWall = Date.now();
  // a wait that starts while the database is unreachable, for a task done before the crash
  const doneEcho = waits.find((w) => w.outcome === 'result' && (caughtUpAt === undefined || w.settledAt < caughtUpAt))!;
  const echoRef = await query(c.primaryUrl, `SELECT id::text FROM leasehold.task WHERE name = 'failover-echo' AND payload->>'n' = $1`, [String(doneEcho.n)]);
  let waitedWhileDown: Promise<string> | undefined;
  const failover = await c.failOver({
    detectMs: DETECT_MS,
    whileDown: () =>
      (waitedWhileDown = waitForResult<{ n: number }>(pool, String(echoRef[0]!.id), { timeout: `${SETTLE_BOUND_MS}ms` }).then(
        (result) => (result.n === doneEcho.n ? 'result' : `wrong result ${result.n}`),
        (error: Error) => `error: ${error.message}`,
      )),
    beforeSwitch:
      mode === 'asynchronous'
        ? async (url) => {
            for (const statement of AFTER_ASYNC_PROMOTION) await query(url, statement);
          }
        : undefined,
  });
  switchedAt = failover.switchedAt;
  const doneBeforeCrash = new Map<number, number>();
  for (const [n, dones] of succeeded) for (const d of dones) if (d.at < failover.crashedAt) doneBeforeCrash.set(n, d.version);

  // recovery: each component works again on the promoted server, within the bound
  const since = (t: number) => Math.round(t - switchedAt);
  await until(() => workerClaimedAt < Infinity, 'the worker claiming on the promoted server', RECOVERY_BOUND_MS);
  await until(() => dispatcherClaimedAt < Infinity, 'the dispatcher claiming on the promoted server', RECOVERY_BOUND_MS);
  await until(() => waits.some((w) => w.settledAt > switchedAt && w.outcome === 'result'), 'a waitForResult answered after the switch', RECOVERY_BOUND_MS);
  // a tick for a slot after the switch ran: the scheduler fired on the promoted server. A tick
  // that merely ran after the switch may be one fired before the crash whose done was lost with
  // the old primary (asynchronous), run again after its lease.
  const switchedAtWall = performance.timeOrigin + switchedAt;
  const ticked = () => tickRuns.find((t) => t.slot > switchedAtWall)?.at;
  await until(() => ticked() !== undefined, 'a tick fired on the promoted server', SCHEDULER_RETRY_CAP_MS + WORKER_POLL_MS);
  const recovered = {
    worker: since(workerClaimedAt),
    dispatcher: since(dispatcherClaimedAt),
    wait: since(Math.min(...waits.filter((w) => w.settledAt > switchedAt).map((w) => w.settledAt))),
    schedule: since(ticked()!),
  };
  // the stream goes on a little after the recovery, then stops, and so do the schedule's ticks
  await sleep(500);
  producing = false;
  await Promise.all(producers);
  await scheduleSetPaused(pool, 'leasehold', [everySecond.name], true);

  // the dispatcher that polls once an hour: once a claim of its got through on the promoted
  // server it sleeps (an hour without LISTEN, else until notified), so only its LISTEN
  // connection, back on the promoted server, can deliver the probe
  await until(() => availableAgain.some((t) => t > switchedAt), 'the hourly dispatcher claiming on the promoted server', RECOVERY_BOUND_MS);
  const probe = next++;
  const probeAt = now();
  added.set(probe, { id: await outbox.add(pool, { aggregateType: 'probe', aggregateId: 'probe', eventType: 'ListenProbe', payload: { n: probe } }), at: now() });
  await until(() => published.has(probe), 'the probe delivered through the LISTEN connection', LISTEN_RECONNECT_CAP_MS);
  const listen = Math.round(publishedAt.get(probe)! - probeAt);

  // everything in flight at the crash ends: finalizes retried, lost ones run again after their lease
  await until(async () => (await readEnd(c.url)).unfinished.length === 0, 'every task and message done', SETTLE_BOUND_MS);
  const settled = since(now());
  await Promise.all([worker.stop({ timeout: '5s' }), dispatcher.stop({ timeout: '5s' }), listening.stop({ timeout: '5s' })]);
  await pool.end();

  return {
    enqueued,
    added,
    published,
    runs,
    doneBeforeCrash,
    succeededTwice: [...succeeded].filter(([, dones]) => dones.length > 1).map(([n]) => n),
    ranAgain: [...runs.values()].filter((list) => list.length > 1).length,
    waits,
    waitedWhileDown: await waitedWhileDown,
    caughtUpAt,
    crashedAt: failover.crashedAt,
    crashedAtWall,
    outageMs: Math.round(failover.switchedAt - failover.crashedAt),
    recovery: { ...recovered, listen, settled },
  };
}

/**
 * A log of every `done` transition of a task or an outbox message, written by a trigger in the
 * transaction that writes it: what survives a failover is exactly what the promoted server has.
 */
async function installDoneLog(pool: pg.Pool): Promise<void> {
  await pool.query(`CREATE TABLE done_log (tbl text NOT NULL, id bigint NOT NULL, lease_version bigint NOT NULL)`);
  await pool.query(`
    CREATE FUNCTION log_done() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO done_log VALUES (TG_TABLE_NAME, NEW.id, NEW.lease_version);
      RETURN NULL;
    END $$`);
  for (const table of ['task', 'outbox']) {
    await pool.query(`
      CREATE TRIGGER log_done AFTER UPDATE ON leasehold.${table} FOR EACH ROW
      WHEN (NEW.status = 'done' AND OLD.status IS DISTINCT FROM 'done') EXECUTE FUNCTION log_done()`);
  }
}

interface End {
  unfinished: string[];
  doneTwice: string[];
  doneLogMismatch: string[];
  /** Work tasks by n: id and the fencing token of the accepted done. */
  work: Map<number, { id: string; doneVersion: number | undefined }>;
  /** Echo tasks (waited for) by n. */
  echo: Set<number>;
  /** Outbox messages by n. */
  messages: Set<number>;
  /** Task id → `<name> <n>`, and `m<message id>` → `message <n>`. */
  byId: Map<string, string>;
  ticks: { duplicates: string[]; gaps: string[]; last: number };
}

/** What the (promoted) server holds. */
async function readEnd(url: string): Promise<End> {
  const rows = async (text: string) => (await query(url, text)) as Record<string, string | null>[];
  const unfinished = await rows(`
    SELECT 'task ' || id || ' ' || status AS what FROM leasehold.task WHERE status <> 'done'
    UNION ALL SELECT 'message ' || id || ' ' || status FROM leasehold.outbox WHERE status <> 'done'`);
  const doneTwice = await rows(`SELECT tbl || ' ' || id AS what FROM done_log GROUP BY tbl, id HAVING count(*) > 1`);
  // the one done accepted is the row's last claim's (its fencing token)
  const mismatch = await rows(`
    SELECT 'task ' || t.id AS what FROM leasehold.task AS t LEFT JOIN done_log AS d ON d.tbl = 'task' AND d.id = t.id
    WHERE d.lease_version IS DISTINCT FROM t.lease_version
    UNION ALL
    SELECT 'message ' || o.id FROM leasehold.outbox AS o LEFT JOIN done_log AS d ON d.tbl = 'outbox' AND d.id = o.id
    WHERE d.lease_version IS DISTINCT FROM o.lease_version`);
  const tasks = await rows(`
    SELECT t.id::text, t.name, t.payload->>'n' AS n, d.lease_version::text AS done_version
    FROM leasehold.task AS t LEFT JOIN done_log AS d ON d.tbl = 'task' AND d.id = t.id
    WHERE t.name IN ('failover-work', 'failover-echo')`);
  const messages = await rows(`SELECT id::text, payload->>'n' AS n FROM leasehold.outbox`);
  const ticks = await rows(`SELECT payload->>'at' AS at, count(*)::int AS n FROM leasehold.task WHERE name = 'failover-tick' GROUP BY 1 ORDER BY 1`);
  const duplicates = ticks.filter((t) => Number(t.n) > 1).map((t) => t.at!);
  const gaps: string[] = [];
  for (let i = 1; i < ticks.length; i++) {
    if (Date.parse(ticks[i]!.at!) - Date.parse(ticks[i - 1]!.at!) !== 1_000) gaps.push(`${ticks[i - 1]!.at} → ${ticks[i]!.at}`);
  }
  const work = new Map<number, { id: string; doneVersion: number | undefined }>();
  const echo = new Set<number>();
  const byId = new Map<string, string>();
  for (const t of tasks) {
    byId.set(t.id!, `${t.name} ${t.n}`);
    if (t.name === 'failover-echo') echo.add(Number(t.n));
    else work.set(Number(t.n), { id: t.id!, doneVersion: t.done_version === null ? undefined : Number(t.done_version) });
  }
  for (const m of messages) byId.set(`m${m.id}`, `message ${m.n}`);
  return {
    unfinished: unfinished.map((r) => r.what!),
    doneTwice: doneTwice.map((r) => r.what!),
    doneLogMismatch: mismatch.map((r) => r.what!),
    work,
    echo,
    messages: new Set(messages.map((m) => Number(m.n))),
    byId,
    ticks: { duplicates, gaps, last: ticks.length === 0 ? 0 : Date.parse(ticks.at(-1)!.at!) },
  };
}
