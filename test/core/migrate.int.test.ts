import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ConfigError, migrate, TASK_STATUSES, type MigrateResult } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { allMigrations } from '../migration-lines.js';

const t = useTestDatabase();
const run = promisify(execFile);

describe('migrate', () => {
  it('is idempotent: a second call applies nothing and leaves one schema', async () => {
    const first = await migrate(t.pool, { schema: 'twice' });
    const second = await migrate(t.db, { schema: 'twice' });
    expect(first.applied).toEqual(allMigrations('core'));
    expect(second.applied).toEqual([]);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM twice.leasehold_migration`.execute(t.db);
    expect(rows[0]?.n).toBe(String(allMigrations('core').length));
  });

  it('is safe from two processes at once', async () => {
    const child = ['--conditions=@leasehold/source', '--import', 'tsx', 'test/core/migrate-child.ts', t.url, 'raced'];
    const results = await Promise.all([run(process.execPath, child), run(process.execPath, child)]);
    const applied = results.map((r) => (JSON.parse(r.stdout.trim()) as MigrateResult).applied);
    expect(applied.flat().sort()).toEqual(allMigrations('core').sort()); // each migration applied by exactly one of them
    const { rows } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'raced' AND table_name = 'task'`.execute(t.db);
    expect(rows[0]?.n).toBe('1');
  });

  it('refuses a bad schema name before any SQL runs', async () => {
    const noSql = {
      query: async (): Promise<never> => {
        throw new Error('SQL ran');
      },
      connect: async (): Promise<never> => {
        throw new Error('connected');
      },
    };
    for (const schema of ['x"; DROP TABLE y; --', 'Upper', '1abc', '', 'a-b']) {
      await expect(migrate(noSql, { schema })).rejects.toThrow(ConfigError);
      await expect(migrate(noSql, { schema })).rejects.toMatchObject({ option: 'schema' });
    }
  });

  it('creates a status CHECK constraint listing exactly TASK_STATUSES', async () => {
    const { rows } = await sql<{ def: string }>`
      SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
      JOIN pg_class r ON r.oid = c.conrelid JOIN pg_namespace n ON n.oid = r.relnamespace
      WHERE n.nspname = 'leasehold' AND r.relname = 'task' AND c.contype = 'c'
        AND pg_get_constraintdef(c.oid) LIKE '%status%'`.execute(t.db);
    const listed = [...(rows[0]?.def ?? '').matchAll(/'([a-z]+)'/g)].map((m) => m[1]);
    expect(listed).toEqual([...TASK_STATUSES]);
  });
});
