// The dispatcher on a pool of one or two connections (issue #11 item 4): its LISTEN connection
// is its own, so claims, heartbeats and finalizes still get the pool's connections.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createDispatcher, createOutbox, type OutboxMessage } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { readMessages, resetOutbox, waitUntil } from './helpers.js';

const t = useTestDatabase();
const track = useWorkers();
const outbox = createOutbox();

describe('the dispatcher on a small pool', () => {
  for (const max of [1, 2]) {
    it(`pool max ${max}: wakes on NOTIFY, delivers every message, and stop returns holding nothing`, async () => {
      await resetOutbox(t.db);
      const pool = new pg.Pool({ connectionString: t.url, max });
      pool.on('error', () => undefined);
      const seen: OutboxMessage[] = [];
      // a 10 s poll: only a working LISTEN connection makes delivery quick
      const dispatcher = track(createDispatcher({ pool, publisher: { publish: async (m) => void seen.push(m) }, pollInterval: '10s', concurrency: 4 }));
      try {
        await dispatcher.start();
        await nextEvent(dispatcher, 'worker:idle', () => true, 5_000);
        const committed = performance.now();
        const first = nextEvent(dispatcher, 'task:succeeded', () => true, 5_000);
        await outbox.add(t.pool, { aggregateType: 'order', aggregateId: 1, eventType: 'Placed', payload: { n: 0 } });
        await first;
        expect(performance.now() - committed).toBeLessThan(1_000);
        await outbox.addMany(t.pool, Array.from({ length: 20 }, (_, n) => ({ aggregateType: 'order', aggregateId: n, eventType: 'Placed', payload: { n } })));
        await waitUntil(async () => (await readMessages(t.db)).every((m) => m.status === 'done'), 'all messages done', 10_000);
        expect(seen).toHaveLength(21);
        await dispatcher.stop({ timeout: '5s' });
        expect(pool.totalCount - pool.idleCount).toBe(0);
        expect(pool.totalCount).toBeLessThanOrEqual(max);
      } finally {
        await pool.end();
      }
    });
  }
});
