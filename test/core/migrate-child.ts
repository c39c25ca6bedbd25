// Spawned by migrate.int.test.ts: one process that migrates a schema, to race another.
import pg from 'pg';
import { migrate } from '@leasehold/core';

const [url, schema] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: 1 });
try {
  const result = await migrate(pool, { schema });
  console.log(JSON.stringify(result));
} finally {
  await pool.end();
}
