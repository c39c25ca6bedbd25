// Once per test run: find a PostgreSQL (DATABASE_URL, else a throwaway one), build a template
// database with every package's migrations, and hand both to the test files, which each clone
// the template into a database of their own.
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '@leasehold/core';
import { startEmbeddedPostgres, type ThrowawayPostgres } from '@leasehold/core/testing';
import { migrateAll } from './migrate-all.js';

declare module 'vitest' {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
    serverVersion: string;
  }
}

let throwaway: ThrowawayPostgres | undefined;
let adminUrl = '';
let templateDatabase = '';

export async function setup(project: TestProject): Promise<void> {
  const fromEnv = process.env.DATABASE_URL;
  if (fromEnv) {
    adminUrl = fromEnv;
  } else {
    throwaway = await startEmbeddedPostgres({ postgresFlags: ['-c', 'fsync=off', '-c', 'max_connections=300'] });
    adminUrl = throwaway.connectionString;
  }
  templateDatabase = `lh_tpl_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  let serverVersion: string;
  try {
    serverVersion = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    await admin.query(`CREATE DATABASE ${templateDatabase}`);
  } finally {
    await admin.end();
  }
  const pool = new pg.Pool({ connectionString: withDatabase(adminUrl, templateDatabase), max: 2 });
  try {
    await migrate(pool);
    await migrateAll(pool);
  } finally {
    await pool.end();
  }
  console.log(`[test] PostgreSQL ${serverVersion} (${fromEnv ? 'DATABASE_URL' : 'embedded, throwaway'})`);
  project.provide('adminUrl', adminUrl);
  project.provide('templateDatabase', templateDatabase);
  project.provide('serverVersion', serverVersion);
}

export async function teardown(): Promise<void> {
  try {
    if (templateDatabase) {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${templateDatabase} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    }
  } finally {
    await throwaway?.stop();
  }
}

/** The same server URL with another database name. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
