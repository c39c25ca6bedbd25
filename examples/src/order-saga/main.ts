// An order saga as a workflow: reserve stock (exactly once, in the app's database), charge the
// card (idempotent), wait for a human's approval, cool off, ship through a child task — and undo
// what was done (refund, release the stock) when a step fails for good. Four orders: one goes
// through; one card is declined; one is never approved; one the carrier refuses to ship.
//   npm run order-saga -w @leasehold/examples   (DATABASE_URL, or a throwaway server when unset)
import { createWorker, enqueue, getTask, migrate, sendSignal, waitForResult, type TaskRef } from '@leasehold/core';
import type pg from 'pg';
import { openDatabase } from '../shared/database.js';
import { createPool } from '../shared/pool.js';
import { shutdownSignal } from '../shared/shutdown.js';
import { DECLINED_CARD, FakePayments } from './payments.js';
import { approved, defineOrderTasks, UNSHIPPABLE, type Order, type SagaResult } from './saga.js';

const SCHEMA = 'order_saga_example';
const order = (orderId: string, over: Partial<Order> = {}): Order => ({
  orderId, sku: 'KETTLE-1', qty: 1, amountCents: 4_900, card: '4242-4242-4242-4242', address: '1 Main St', approvalWindow: '1m', ...over,
});
// what each order should end as; `approve`: the program approves it when it waits for approval
const CASES = [
  { order: order('A-1'), approve: true, outcome: 'shipped', charged: true },
  { order: order('A-2', { card: DECLINED_CARD }), approve: false, outcome: 'compensated', charged: false },
  { order: order('A-3', { approvalWindow: '1s' }), approve: false, outcome: 'compensated', charged: true },
  { order: order('A-4', { address: UNSHIPPABLE }), approve: true, outcome: 'compensated', charged: true },
] as const;

const signal = shutdownSignal();
const database = await openDatabase(signal);
const pool = createPool(database.url, 8);
let code = 1;
try {
  await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate(pool, { schema: SCHEMA }); // leasehold's tables, in the example's schema
  // no unique key on order_id on purpose: the check below counts rows to show the step ran once
  await pool.query(`CREATE TABLE ${SCHEMA}.stock_reservation (order_id text, sku text, qty int, task_id bigint, released_at timestamptz)`);
  await pool.query(`CREATE TABLE ${SCHEMA}.approval (order_id text PRIMARY KEY, approved_by text, task_id bigint)`);

  const payments = new FakePayments();
  const { orderSaga, ship } = defineOrderTasks(payments, SCHEMA);
  const refs = new Map<string, TaskRef<SagaResult>>();
  for (const c of CASES) refs.set(c.order.orderId, await enqueue(pool, orderSaga, c.order, { schema: SCHEMA }));

  const worker = createWorker({ pool, schema: SCHEMA, tasks: [orderSaga, ship], concurrency: 4, pollInterval: '200ms' });
  worker.on('task:retrying', ({ task, error }) => console.log(`retrying  ${task.name} #${task.id}: ${error.message}`));
  worker.on('task:dead', ({ task, error }) => console.log(`dead      ${task.name} #${task.id}: ${error.message}`));
  // The approver: a workflow parks while it waits, and the worker says so. Ask the task what it
  // waits for (it also parks for the sleep and the child) and approve the ones to approve.
  const toApprove = new Map(CASES.filter((c) => c.approve).map((c) => [refs.get(c.order.orderId)!.id, c.order.orderId]));
  const approvals: Promise<void>[] = [];
  worker.on('task:suspended', ({ task }) => {
    const orderId = toApprove.get(task.id);
    if (orderId === undefined) return;
    // a failed approval leaves its order waiting: waitForResult below then times out and says so
    approvals.push(approveIfWaiting(pool, task.id, orderId, () => toApprove.delete(task.id)).catch((error: unknown) => console.error(`approving ${orderId} failed:`, error)));
  });
  await worker.start();

  const results = new Map<string, SagaResult>();
  for (const [orderId, ref] of refs) results.set(orderId, await waitForResult(pool, ref, { timeout: '20s', signal, schema: SCHEMA }));
  await Promise.all(approvals);
  await worker.stop({ timeout: '5s' });
  code = (await check(pool, payments, results)) ? 0 : 1;
} catch (error) {
  code = signal.aborted ? 130 : 1;
  if (!signal.aborted) console.error('example failed:', error);
} finally {
  await pool.end();
  await database.close();
}
process.exit(code);

/**
 * Approves an order parked on the approval signal: the app's own write and the signal commit in
 * one transaction, so the workflow never resumes for an approval the app did not record.
 */
async function approveIfWaiting(db: pg.Pool, taskId: string, orderId: string, done: () => void): Promise<void> {
  const info = await getTask(db, taskId, { schema: SCHEMA });
  if (info?.waitFor !== `signal:${approved.name}`) return;
  done();
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query(`INSERT INTO ${SCHEMA}.approval (order_id, approved_by, task_id) VALUES ($1, $2, $3)`, [orderId, 'grace@example.com', taskId]);
    const { delivered } = await sendSignal(client, taskId, approved, { by: 'grace@example.com' }, { schema: SCHEMA });
    await client.query('COMMIT');
    console.log(`approved  ${orderId} (task #${taskId}, delivered: ${delivered})`);
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

/** Prints what happened and says whether it is what the example promises. */
async function check(db: pg.Pool, payments: FakePayments, results: Map<string, SagaResult>): Promise<boolean> {
  const { rows } = await db.query<{ order_id: string; n: number; released: boolean }>(
    `SELECT order_id, count(*)::int AS n, bool_and(released_at IS NOT NULL) AS released FROM ${SCHEMA}.stock_reservation GROUP BY order_id`,
  );
  const reservations = new Map(rows.map((r) => [r.order_id, r]));
  let ok = true;
  console.log('');
  for (const c of CASES) {
    const id = c.order.orderId;
    const result = results.get(id)!;
    const reservation = reservations.get(id);
    const charges = payments.chargesOf(id);
    const compensated = c.outcome === 'compensated';
    const good =
      result.outcome === c.outcome &&
      reservation?.n === 1 && reservation.released === compensated && // reserved once; released only when compensated
      charges.length === (c.charged ? 1 : 0) && charges.every((ch) => ch.refunded === compensated) &&
      (result.outcome === 'compensated' || (result.trackingNo === `TRK-${id}` && result.approvedBy === 'grace@example.com'));
    ok &&= good;
    const detail = result.outcome === 'shipped' ? `tracking ${result.trackingNo}, approved by ${result.approvedBy}` : result.reason;
    console.log(`${good ? 'ok ' : 'BAD'} ${id}: ${result.outcome} (${detail}); reservations ${reservation?.n ?? 0}${reservation?.released ? ' released' : ''}; charges ${charges.length}${charges.some((ch) => ch.refunded) ? ' refunded' : ''}`);
  }
  // three orders were charged, each first attempt "lost" its reply: six calls, three charges
  ok &&= payments.calls === 7; // + the declined card's one call
  console.log(`payment calls ${payments.calls} for ${CASES.filter((c) => c.charged).length} charges`);
  console.log(ok ? 'OK: every order reserved once and charged at most once; the failed ones refunded and released.' : 'FAILED: see above');
  return ok;
}
