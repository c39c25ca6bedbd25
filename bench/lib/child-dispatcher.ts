// The `dispatcher` role of a bench child: one outbox dispatcher (createDispatcher) with a
// publisher that only counts, and checks that each aggregate's messages arrive in id order.
import { createDispatcher } from '@leasehold/outbox';
import { createPool, type ChildOptions } from './child-options.js';
import { serveConsumer } from './child-serve.js';

type Send = (message: Record<string, unknown>) => Promise<void>;

export async function startDispatcher(options: ChildOptions, send: Send): Promise<void> {
  const pool = createPool(options, 10);
  await Promise.all(Array.from({ length: 4 }, () => pool.query('SELECT 1')));
  let handled = 0;
  let outOfOrder = 0;
  const lastIdByKey = new Map<string, bigint>();
  const dispatcher = createDispatcher({
    pool,
    schema: options.schema,
    concurrency: options.concurrency ?? 8,
    publisher: {
      publish: async (message) => {
        handled++;
        const id = BigInt(message.id);
        const last = lastIdByKey.get(message.key);
        if (last !== undefined && id < last) outOfOrder++;
        lastIdByKey.set(message.key, id);
      },
    },
  });
  dispatcher.on('worker:error', ({ error }) => console.error(`[bench dispatcher] ${error.message}`));
  await serveConsumer(
    {
      start: () => dispatcher.start(),
      stop: async () => {
        await dispatcher.stop({ timeout: '10s' });
        await pool.end();
      },
      handled: () => handled,
      stats: () => ({ outOfOrder }),
    },
    send,
  );
}
