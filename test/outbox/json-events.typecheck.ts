// Compiled by `npm run typecheck`, never run: an outbox event's payload type must be JSON, as a
// task's (issue 34). Each @ts-expect-error line must stay an error.
import type pg from 'pg';
import { createOutbox } from '@leasehold/outbox';

declare const pool: pg.Pool;
const outbox = createOutbox();
const event = { aggregateType: 'order', aggregateId: 1, eventType: 'OrderPaid' } as const;

export async function events(): Promise<void> {
  await outbox.add(pool, { ...event, payload: { paidAt: '2026-12-04T00:00:00Z', total: 12.5 } });
  await outbox.addMany(pool, [
    { ...event, payload: { paidAt: 'x' } },
    { ...event, payload: [1, 'two'] },
    { ...event, payload: null },
  ]);
  const loose: unknown = { anything: true };
  await outbox.add(pool, { ...event, payload: loose });
  // @ts-expect-error -- a Date would be published as a string
  await outbox.add(pool, { ...event, payload: { paidAt: new Date() } });
  // @ts-expect-error -- one event of the batch is enough
  await outbox.addMany(pool, [{ ...event, payload: { ok: true } }, { ...event, payload: { seen: new Set<string>() } }]);
}
