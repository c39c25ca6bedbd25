// Runs until the test releases an advisory lock: a task that is running when SIGTERM arrives.
import process from 'node:process';
import pg from 'pg';
import { defineTask } from '@leasehold/core';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });

export const waitForUnlock = defineTask('cli-block', {
  handler: async ({ lock }) => {
    const client = await pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [lock]);
      await client.query('SELECT pg_advisory_unlock($1)', [lock]);
    } finally {
      client.release();
    }
  },
});

// the same definition again, in a list: counted once
export const all = [waitForUnlock];
