// The leasehold driver for the peer benchmark harness (/work/shared/bench-peers, see its README),
// shared by the two entries: leasehold.mjs (library defaults, as users run it) and
// leasehold-expert.mjs (the expert options). It runs the built packages (`npm run build`), as an
// application that installed them would: `@leasehold/core` resolves to packages/core/dist.
/* global process, console, URL */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const SCHEMA = 'leasehold';
const TASK = 'noop';

// resolved from this repository (the harness runs from its own folder), with the default
// conditions: the package's "import" export, i.e. its dist
const require = createRequire(import.meta.url);
const load = (name) => import(pathToFileURL(require.resolve(name).replace(/\.cjs$/, '.js')).href);

let lib;
async function leasehold() {
  if (!lib) {
    const core = await load('@leasehold/core');
    if (!core.createWorker) throw new Error('@leasehold/core has no dist: run `npm run build` in the leasehold repository first');
    const pg = (await import(pathToFileURL(require.resolve('pg')).href)).default;
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

/**
 * A driver whose workers get `workerOptions` on top of `createWorker({ pool, tasks, schema,
 * concurrency })`; `label` names them in the report.
 */
export function leaseholdDriver({ name, workerOptions, label }) {
  return {
    name,

    async info() {
      return {
        package: '@leasehold/core',
        version: `${version} (dist)`,
        settings: {
          producer: 'pg.Pool({ max: poolSize }) -> enqueue(pool, task, payload) / enqueueMany(pool, task, items)',
          consumer: {
            api: `createWorker({ pool, tasks: [noop], concurrency${Object.keys(workerOptions).map((k) => `, ${k}`).join('')} })`,
            concurrency: 'per-process concurrency (8, or 4 per process in 2x4)',
            ...workerOptions,
            sizing: label,
            pool: 'pg.Pool, max 10 (LISTEN uses a connection of its own)',
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
      const worker = core.createWorker({ pool, tasks: [task], schema: SCHEMA, concurrency, ...workerOptions });
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
}

/** A non-negative integer from the environment, or `fallback`. */
export function envCount(name, fallback) {
  const value = process.env[name] === undefined ? fallback : Number(process.env[name]);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
  return value;
}
