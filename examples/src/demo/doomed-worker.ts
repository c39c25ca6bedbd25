// The fourth dispatcher worker, in a process of its own so that it can really be killed.
// After the receiver has applied its n-th delivery — but before the worker records it as done —
// it tells the parent, which SIGKILLs it. Its leases then run out, and the other workers
// redeliver those events: the receiver's inbox must absorb the duplicates.
import { createPool } from '../shared/pool.js';
import { createDispatcher, type Publisher } from '@leasehold/outbox';
import { dispatcherOptions } from './dispatcher-options.js';
import { demoPublisher } from './publisher.js';

const [databaseUrl, receiverUrl, secret, owner, killAfter] = process.argv.slice(2) as [string, string, string, string, string];
const send = (message: { type: 'ready' } | { type: 'kill-me'; eventId: string }) => process.send?.(message);

const pool = createPool(databaseUrl, 3);
const http = demoPublisher(receiverUrl, secret, owner);
let delivered = 0;
const publisher: Publisher = {
  async publish(message, context) {
    await http.publish(message, context);
    if (++delivered === Number(killAfter)) {
      send({ type: 'kill-me', eventId: message.id });
      await new Promise(() => {}); // never returns: the parent kills this process now
    }
  },
};

const dispatcher = createDispatcher(dispatcherOptions(pool, publisher, owner));
await dispatcher.start();
send({ type: 'ready' });
// no signal handlers here: the parent ends this process with SIGKILL, or it dies with the terminal
