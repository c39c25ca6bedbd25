// A worker process for chaos.int.test.ts: runs chaos-flow.ts until killed or SIGTERMed. Prints
// "ready" once it claims, and one line per lease it lost.
import pg from 'pg';
import { createWorker } from '@leasehold/core';
import { chaosFlow } from './chaos-flow.js';

const pool = new pg.Pool({ connectionString: process.argv[2], max: 6 });
pool.on('error', () => undefined); // a frozen process's connections may be cut meanwhile
const worker = createWorker({ pool, tasks: [chaosFlow(pool)], concurrency: 8, heartbeatInterval: '300ms', pollInterval: 50, owner: `chaos-${process.pid}`, logger: null });
worker.on('task:lease-lost', ({ task }) => process.stdout.write(`lost ${task.id}\n`));
await worker.start();
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  void worker.stop({ timeout: '5s' }).then(() => pool.end()).then(() => process.exit(0));
});
