import { setTimeout as sleep } from 'node:timers/promises';
import { createInbox, generateWebhookSecret } from '@leasehold/adapters-http';
import { createOutbox, type OutboxStats } from '@leasehold/outbox';
import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import { createPool } from '../shared/pool.js';
import { runOrderService, type OrderServiceProgress } from './order-service.js';
import { createProgressLine } from './progress.js';
import { startReceiver, type ReceiverCounters } from './receiver.js';
import { setUpSchemas } from './schema.js';
import * as settings from './settings.js';
import type { DemoDatabase } from './tables.js';
import { attemptsOf, verify, type Verification } from './verify.js';
import { startWorkers, type Kill } from './workers.js';

/** Everything the final report says. */
export interface DemoResult {
  readonly verification: Verification;
  readonly receiver: ReceiverCounters;
  readonly kill: Kill | undefined;
  /** Attempts of the event the killed worker had delivered (its crashed attempt included). */
  readonly killedEventAttempts: number;
  readonly peakOldestPendingMs: number;
  readonly finalOldestPendingMs: number | null;
  /** When the first order was placed (epoch ms). */
  readonly dispatchStartedAt: number;
  /** From the first order to the last delivery. */
  readonly dispatchMs: number;
  readonly timedOut: boolean;
}

/**
 * The demo scenario: an order service writes orders and their outbox events in one
 * transaction; four dispatcher workers (one in a child process) deliver them as signed
 * webhooks to a receiver that verifies them and applies each once through its inbox. Faults:
 * the receiver is down (503) for a while, and the child worker is SIGKILLed right after a
 * delivery, before recording it.
 */
export async function runDemo(databaseUrl: string, signal: AbortSignal): Promise<DemoResult> {
  // two services, two pools: the order service's and the receiving service's
  const [pool, db] = connect(databaseUrl, 5);
  const [, receiverDb] = connect(databaseUrl, 10);
  const cleanup: Array<() => Promise<void>> = [() => db.destroy(), () => receiverDb.destroy()];
  try {
    await setUpSchemas(db);
    const outbox = createOutbox({ schema: settings.SHOP_SCHEMA, orderedEventTypes: ['OrderPlaced', 'OrderPaid'] });
    const secret = generateWebhookSecret();
    const receiver = await startReceiver({
      db: receiverDb,
      inbox: createInbox({ schema: settings.RECEIVER_SCHEMA }),
      secret,
      downForRequests: settings.RECEIVER_DOWN_FOR_REQUESTS,
    });
    cleanup.unshift(() => receiver.close());
    console.log(`receiver: ${receiver.url} (verifies signatures, applies through its inbox; 503 for its first ${settings.RECEIVER_DOWN_FOR_REQUESTS} requests)`);
    const workers = await startWorkers({
      databaseUrl,
      receiverUrl: receiver.url,
      secret,
      local: settings.WORKERS,
      doomed: settings.DOOMED_WORKER,
      killAfter: settings.KILL_AFTER_DELIVERIES,
    });
    cleanup.unshift(() => workers.stop());
    console.log(
      `workers: ${settings.WORKERS.join(', ')} in this process, ${settings.DOOMED_WORKER} in a child process ` +
        `(SIGKILLed after its ${settings.KILL_AFTER_DELIVERIES}rd applied delivery); lease ${settings.LEASE}`,
    );
    console.log(`orders: placing ${settings.ORDERS}, each with OrderPlaced then OrderPaid, written in the order's transaction\n`);

    const orders: OrderServiceProgress = { placed: 0, paid: 0, finished: false };
    const dispatchStart = Date.now();
    const producing = runOrderService(db, outbox, { orders: settings.ORDERS, clients: settings.CLIENTS }, orders, signal);
    producing.catch(() => undefined); // awaited below; a failure must not be unhandled meanwhile
    const progress = createProgressLine();
    let peakOldestPendingMs = 0;
    let stats: OutboxStats;
    let timedOut = false;
    for (;;) {
      stats = await outbox.stats(pool);
      peakOldestPendingMs = Math.max(peakOldestPendingMs, stats.oldestPendingAgeMs ?? 0);
      progress.update({ elapsedMs: Date.now() - dispatchStart, orders, stats, receiver: receiver.counters, kill: workers.kill });
      const { pending, processing } = stats.counts;
      if (orders.finished && pending === 0 && processing === 0) break;
      if (signal.aborted) throw signal.reason;
      if (Date.now() - dispatchStart > settings.DEADLINE_MS) {
        timedOut = true;
        break;
      }
      await sleep(250);
    }
    const dispatchMs = Date.now() - dispatchStart;
    progress.end();
    await producing;
    await workers.stop();
    return {
      verification: await verify(db),
      receiver: receiver.counters,
      kill: workers.kill,
      killedEventAttempts: workers.kill ? await attemptsOf(db, workers.kill.eventId) : 0,
      peakOldestPendingMs,
      finalOldestPendingMs: stats.oldestPendingAgeMs,
      dispatchStartedAt: dispatchStart,
      dispatchMs,
      timedOut,
    };
  } finally {
    for (const step of cleanup) await step().catch(() => undefined);
  }
}

function connect(databaseUrl: string, max: number): [pg.Pool, Kysely<DemoDatabase>] {
  const pool = createPool(databaseUrl, max);
  return [pool, new Kysely<DemoDatabase>({ dialect: new PostgresDialect({ pool }) })];
}
