// A worker process for checkpoint.int.test.ts: runs the `steps` task, checkpoints each step,
// and after step 2 tells the parent and hangs, to be SIGKILLed mid-task.
import pg from 'pg';
import { createWorker } from '@leasehold/core';
import { stepsTask } from './checkpoint-task.js';

const pool = new pg.Pool({ connectionString: process.argv[2], max: 4 });
const worker = createWorker({ pool, tasks: [stepsTask(pool, { hangAfter: 2 })], owner: `child-${process.pid}`, pollInterval: 50 });
await worker.start();
