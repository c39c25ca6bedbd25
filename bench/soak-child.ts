// One worker process of bench/soak.ts: core's worker at the library defaults over the soak's task
// types (of version 1, or of the deploy's version 2), killed and restarted by the runner. Through a pooler (SOAK_POOLER_URL) its pool sends no
// prepared statements and it LISTENs on a direct connection. Its logger's warnings and errors go
// to stderr, which the runner counts.
import pg from 'pg';
import { createWorker, noPreparedStatements } from '@leasehold/core';
import { soakTasks } from './soak-tasks.js';

const [, , schema = '', direct = '', pooled = '', version = '1'] = process.argv;
const pool = new pg.Pool({ connectionString: pooled || direct, max: 10 });
if (pooled) noPreparedStatements(pool);
const effects = new pg.Pool({ connectionString: direct, max: 6 });
const worker = createWorker({
  pool,
  schema,
  tasks: Object.values(soakTasks(schema, effects, version === '2' ? 2 : 1)),
  ...(pooled ? { noPreparedStatements: true, listenConnectionString: direct } : {}),
});
await worker.start();
process.send?.('started');
process.once('SIGTERM', () => {
  void worker
    .stop()
    .then(() => Promise.all([pool.end(), effects.end()]))
    .then(() => process.exit(0));
});
