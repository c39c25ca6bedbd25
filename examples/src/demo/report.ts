import type { DemoResult } from './run-demo.js';
import { DEADLINE_MS, ORDERS } from './settings.js';

/** The checks the exit code rests on: every event applied exactly once, nothing dead. */
export function failures(result: DemoResult): string[] {
  const v = result.verification;
  const problems: string[] = [];
  if (result.timedOut) problems.push(`not every event was delivered within ${DEADLINE_MS / 1000} s`);
  if (v.created !== ORDERS * 2) problems.push(`expected ${ORDERS * 2} events, the outbox holds ${v.created}`);
  if (v.delivered !== v.created) problems.push(`${v.created - v.delivered} event(s) not delivered`);
  if (v.dead > 0) problems.push(`${v.dead} event(s) dead`);
  if (v.notExactlyOnce > 0) problems.push(`${v.notExactlyOnce} event(s) not applied exactly once at the receiver`);
  if (v.appliedRows !== v.created) problems.push(`the receiver applied ${v.appliedRows} times for ${v.created} events`);
  if (result.receiver.outOfOrder > 0) problems.push(`${result.receiver.outOfOrder} OrderPaid applied before its OrderPlaced`);
  if (result.receiver.rejected > 0) problems.push(`${result.receiver.rejected} deliveries failed signature verification`);
  return problems;
}

/** Prints the final report. */
export function printReport(result: DemoResult, problems: readonly string[]): void {
  const v = result.verification;
  const r = result.receiver;
  const seconds = result.dispatchMs / 1000;
  const row = (label: string, value: string | number, note = '') => console.log(`  ${label.padEnd(28)} ${String(value).padStart(6)}  ${note}`);
  console.log('\nreport');
  row('events created', v.created, `${ORDERS} orders × (OrderPlaced, OrderPaid), each in its order's transaction`);
  row('delivered', v.delivered, 'outbox rows done');
  row('applied at the receiver', v.appliedRows, v.notExactlyOnce === 0 && v.appliedRows === v.created ? 'every event exactly once' : 'NOT exactly once');
  row('duplicates absorbed', r.duplicates, 'redeliveries the inbox recognised and did not apply again');
  row('receiver 503 answers', r.unavailable, 'each retried after Retry-After / backoff');
  row('retries', v.retries, 'delivery attempts beyond the first (503s and the crash)');
  row('dead', v.dead);
  row('out-of-order applications', r.outOfOrder, 'OrderPaid before OrderPlaced of the same order');
  row('oldest pending age', `${(result.peakOldestPendingMs / 1000).toFixed(1)}s`, `peak while running; now ${result.finalOldestPendingMs === null ? 'none pending' : `${result.finalOldestPendingMs} ms`}`);
  row('throughput', `${(v.delivered / seconds).toFixed(0)}/s`, `${v.delivered} events in ${seconds.toFixed(1)} s`);
  if (result.kill) {
    const k = result.kill;
    const redelivered = r.duplicateLog.find((d) => d.eventId === k.eventId);
    console.log(
      `\n  ${k.worker} was SIGKILLed at ${((k.at - result.dispatchStartedAt) / 1000).toFixed(1)} s, after the receiver applied event ${k.eventId} but before ${k.worker} ` +
        `recorded it. Its lease ran out; ${redelivered ? `${redelivered.worker} delivered it again` : 'another worker delivered it again'} ` +
        `(attempt ${result.killedEventAttempts}), and the inbox absorbed the duplicate.`,
    );
  } else {
    console.log('\n  (the child worker was never killed: it made fewer deliveries than planned)');
  }
  console.log(problems.length === 0 ? '\nOK: every event was applied exactly once.' : `\nFAILED:\n  - ${problems.join('\n  - ')}`);
}
