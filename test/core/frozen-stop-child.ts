// A worker process for frozen-stop.int.test.ts:
//
//   node --conditions=@leasehold/source --import tsx test/core/frozen-stop-child.ts <url>
//
// It runs two `frozen-hold` tasks whose handlers never return, prints `running` once both run,
// and on the line `stop` from stdin calls worker.stop({ timeout: 500 }) the way a SIGTERM
// handler would, prints one JSON line with what stop did, and ends its pool. It never calls
// process.exit: the parent checks that it exits on its own, i.e. that nothing keeps it alive.
import { createInterface } from 'node:readline';
import pg from 'pg';
import { createWorker, defineTask } from '@leasehold/core';

const url = process.argv[2];
if (!url) throw new Error('usage: frozen-stop-child.ts <database url>');

// the recommended settings: a pool that gives up on a connection attempt nobody answers, and
// whose idle connections do not keep the process alive
const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 1_000, allowExitOnIdle: true });
pool.on('error', () => undefined);

let running = 0;
const hold = defineTask<object>('frozen-hold', {
  lease: '30s',
  handler: async () => {
    if (++running === 2) process.stdout.write('running\n');
    await new Promise(() => undefined); // never returns, deaf to its signal
  },
});
const worker = createWorker({ pool, tasks: [hold], concurrency: 2, pollInterval: 100, heartbeatInterval: 200 });
let abandoned: { ids: string[]; connections: number } | undefined;
worker.on('worker:abandoned', ({ tasks, connections }) => (abandoned = { ids: tasks.map((t) => t.id), connections }));
await worker.start();

const input = createInterface({ input: process.stdin });
input.once('line', () => {
  input.close();
  void (async () => {
    const started = performance.now();
    await worker.stop({ timeout: 500 });
    const stopMs = Math.round(performance.now() - started);
    // connections the pool is still opening (for statements the worker gave up on) count as not
    // idle until its connectionTimeoutMillis ends them; the worker's own are cut already
    const settled = performance.now();
    while (pool.totalCount - pool.idleCount > 0 && performance.now() - settled < 3_000) await new Promise((r) => setTimeout(r, 20));
    const checkedOut = pool.totalCount - pool.idleCount;
    const settledMs = Math.round(performance.now() - settled);
    process.stdout.write(`${JSON.stringify({ stopMs, abandoned, checkedOut, settledMs, waiting: pool.waitingCount })}\n`);
    await pool.end();
    process.stdout.write('ended\n');
  })();
});
