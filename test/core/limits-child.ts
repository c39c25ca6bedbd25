// A worker process for limits-processes.int.test.ts: runs the limited tasks of limits-tasks.ts
// with concurrency 10 (or the second argument) until SIGTERM, then stops and exits. Prints
// "started" once it claims.
import pg from 'pg';
import { createWorker } from '@leasehold/core';
import { callApi, pacedCall, syncTenant, wideCall } from './limits-tasks.js';

const pool = new pg.Pool({ connectionString: process.argv[2], max: 4 });
const concurrency = Number(process.argv[3] ?? 10);
const worker = createWorker({ pool, tasks: [callApi, syncTenant, pacedCall, wideCall], concurrency, owner: `child-${process.pid}`, logger: null });
await worker.start();
process.stdout.write('started\n');
process.once('SIGTERM', () => {
  void worker.stop({ timeout: '5s' }).then(() => pool.end()).then(() => process.exit(0));
});
