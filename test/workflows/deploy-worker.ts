// A worker process of the rolling-deploy test: runs deploy-flow.ts's old or new code (argv[3])
// until SIGTERM. Prints "ready" once it claims, and "violation <id> <version>" for a run whose
// version its code does not declare (the claim must never hand it one).
import pg from 'pg';
import { createWorker, type TaskContext } from '@leasehold/core';
import { deployFlow, type Code } from './deploy-flow.js';

const code = process.argv[3] as Code;
const pool = new pg.Pool({ connectionString: process.argv[2], max: 6 });
pool.on('error', () => undefined);
const runs = new Set(code === 'new' ? [1, 2] : [1]);
// a run's version changes only by its own patch write, so at the handler's start it is the claimed one
const checkVersion = async (ctx: TaskContext) => {
  const { rows } = await pool.query<{ version: number }>('SELECT version FROM leasehold.task WHERE id = $1', [ctx.task.id]);
  const version = rows[0]?.version;
  if (version === undefined || !runs.has(version)) process.stdout.write(`violation ${ctx.task.id} ${version}\n`);
};
const worker = createWorker({ pool, tasks: [deployFlow(code, checkVersion)], concurrency: 16, pollInterval: 100, owner: `deploy-${code}-${process.pid}`, logger: null });
await worker.start();
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  void worker.stop({ timeout: '10s' }).then(() => pool.end()).then(() => process.exit(0));
});
