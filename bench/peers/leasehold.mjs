// leasehold driver for the peer benchmark harness (/work/shared/bench-peers, see its README):
//
//   node run.mjs --systems /work/main/bench/peers/leasehold.mjs,graphile-worker,pg-boss,raw-pg
//
// It runs leasehold from its TypeScript sources, so no build is needed: before importing
// @leasehold/core it registers tsx's loader and a resolve hook that adds the
// "@leasehold/source" export condition (what `node --conditions=@leasehold/source --import tsx`
// does on the command line; the harness starts its children itself, so the driver does it).
// Throughput knobs: LEASEHOLD_PREFETCH and LEASEHOLD_BATCH (defaults below).
/* global process, console, URL */
import { register } from 'node:module';
import { readFileSync } from 'node:fs';

const SCHEMA = 'leasehold';
const TASK = 'noop';
const PREFETCH = Number(process.env.LEASEHOLD_PREFETCH ?? 492);
const BATCH = Number(process.env.LEASEHOLD_BATCH ?? 250);

// Resolve hook: every resolution also matches the "@leasehold/source" condition. Registered
// after tsx's hooks, so it runs first and hands tsx the extended conditions.
const SOURCE_CONDITION = `data:text/javascript,${encodeURIComponent(`
  export async function resolve(specifier, context, next) {
    const conditions = context.conditions.includes('@leasehold/source') ? context.conditions : [...context.conditions, '@leasehold/source'];
    return next(specifier, { ...context, conditions });
  }`)}`;

let lib;
async function leasehold() {
  if (!lib) {
    const { register: registerTsx } = await import('tsx/esm/api');
    registerTsx();
    register(SOURCE_CONDITION);
    const core = await import('@leasehold/core');
    const pg = (await import('pg')).default;
    lib = { core, pg };
  }
  return lib;
}

const version = JSON.parse(readFileSync(new URL('../../packages/core/package.json', import.meta.url), 'utf8')).version;

async function withPool(env, max, fn) {
  const { pg } = await leasehold();
  const pool = new pg.Pool({ connectionString: env.connectionString, max });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

// eslint-disable-next-line no-restricted-syntax -- the harness loads a driver by its default export
export default {
  name: 'leasehold',

  async info() {
    return {
      package: '@leasehold/core',
      version: `${version} (source)`,
      settings: {
        producer: 'pg.Pool({ max: poolSize }) -> enqueue(pool, task, payload) / enqueueMany(pool, task, items)',
        consumer: {
          api: 'createWorker({ pool, tasks: [noop], concurrency, prefetch, batch })',
          concurrency: 'per-process concurrency (8, or 4 per process in 2x4)',
          prefetch: PREFETCH,
          batch: BATCH,
          pool: 'pg.Pool, max 10 (one connection LISTENs)',
          lease: '60s (default), heartbeat every 20 s, fenced finalize batched',
          pollInterval: '2 s (default; LISTEN/NOTIFY wakes workers)',
        },
        jobs: `task "${TASK}", payload { i }, schema "${SCHEMA}", priority 0, max_attempts 12`,
      },
    };
  },

  async reset(env) {
    const { core } = await leasehold();
    await withPool(env, 2, async (pool) => {
      await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
      await core.migrate(pool, { schema: SCHEMA });
    });
  },

  async producer(env, { poolSize }) {
    const { core, pg } = await leasehold();
    const pool = new pg.Pool({ connectionString: env.connectionString, max: poolSize });
    const task = core.defineTask(TASK, { handler: () => {} });
    return {
      enqueueOne: (payload) => core.enqueue(pool, task, payload, { schema: SCHEMA }),
      enqueueBatch: (payloads) =>
        core.enqueueMany(pool, task, payloads.map((payload) => ({ payload })), { schema: SCHEMA }),
      close: () => pool.end(),
    };
  },

  async consumer(env, { concurrency, handler }) {
    const { core, pg } = await leasehold();
    const pool = new pg.Pool({ connectionString: env.connectionString, max: 10 });
    pool.on('error', (e) => console.error('[leasehold pool]', e.message));
    await Promise.all(Array.from({ length: 4 }, () => pool.query('SELECT 1')));
    const task = core.defineTask(TASK, { handler: (payload) => handler(payload) });
    const worker = core.createWorker({ pool, tasks: [task], schema: SCHEMA, concurrency, prefetch: PREFETCH, batch: BATCH });
    worker.on('worker:error', ({ error }) => console.error('[leasehold worker]', error.message));
    return {
      start: () => worker.start(),
      stop: async () => {
        await worker.stop({ timeout: '10s' });
        await pool.end();
      },
    };
  },

  async pending(client) {
    const r = await client.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.task WHERE status IN ('pending', 'processing')`);
    return r.rows[0].n;
  },
};
