// The dispatcher buffers claimed messages by itself (issue 16), within what its lease covers: its
// slots must be able to publish everything it holds, one after another with each publish taking
// its whole timeout, before the lease runs out — also when heartbeats fail.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createDispatcher, createOutbox } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { gate, resetOutbox, waitUntil } from './helpers.js';

const t = useTestDatabase();
const track = useWorkers();
const outbox = createOutbox();

async function countByStatus(): Promise<Record<string, number>> {
  const r = await sql<{ status: string; n: number }>`SELECT status, count(*)::int AS n FROM leasehold.outbox GROUP BY status`.execute(t.db);
  return Object.fromEntries(r.rows.map((row) => [row.status, row.n]));
}

describe('the dispatcher at its defaults', () => {
  it('buffers claimed messages beyond its slots, never more than its slots publish inside one lease', async () => {
    await resetOutbox(t.db);
    const FAST = 60;
    const stuck = gate();
    let published = 0;
    let blocked = 0;
    // concurrency 2, lease 10 s, publish timeout 2 s: each slot has 4 timeouts inside the lease,
    // so the dispatcher may hold at most 2 × 4 = 8 messages (2 publishing, 6 buffered)
    const dispatcher = track(
      createDispatcher({
        pool: t.pool,
        concurrency: 2,
        lease: '10s',
        publishTimeout: '2s',
        heartbeatInterval: '1s',
        pollInterval: '1s',
        publisher: {
          async publish(_message, { signal }) {
            if (++published <= FAST) return; // fast publishes: the dispatcher learns their time
            blocked++;
            await Promise.race([stuck.wait, new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))]);
          },
        },
      }),
    );
    await outbox.addMany(t.pool, Array.from({ length: 300 }, (_, i) => ({ aggregateType: 'a', aggregateId: i, eventType: 'E', payload: {} })));
    await dispatcher.start();
    try {
      await waitUntil(() => blocked === 2, 'both slots publish a stuck message');
      await waitUntil(async () => (await countByStatus()).done === FAST, 'the fast messages are finalized');
      // while both slots are stuck, what the dispatcher holds settles at its limit and stays there
      let most = 0;
      let processing = 0;
      for (let i = 0; i < 25; i++) {
        processing = (await countByStatus()).processing ?? 0;
        most = Math.max(most, processing);
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(most).toBeLessThanOrEqual(8);
      expect(processing).toBeGreaterThan(2); // it buffers: more held than slots
      expect(blocked).toBe(2); // buffered messages wait for a slot
    } finally {
      stuck.open();
    }
    await waitUntil(async () => (await countByStatus()).done === 300, 'every message is published', 60_000);
    await dispatcher.stop();
  });
});
