// npm run test:consumer — installs the packed packages into fresh applications outside the
// workspace, one per Kysely minor we support, and runs the README's Quick Start there as written
// (examples/src/quick-start/*.ts, which the README embeds — scripts/readme-snippets.ts checks
// they are equal):
//   - compiled with `tsc --strict`, module NodeNext, as ESM (.ts) and as CommonJS (.cts);
//   - run as ESM TypeScript (tsx), as the compiled plain ESM JavaScript, and as the compiled
//     CommonJS (`require`); each run must print that it processed its task or event, then exit 0
//     promptly on SIGTERM;
//   - every entry point of every package loaded with `import` and with `require`, and
//     `npx leasehold` run;
//   - `leasehold worker --tasks` running a plain JavaScript task module, started by npx, by npx
//     with bash as npm's script shell, and as the installed bin: a task enqueued with enqueue()
//     and one enqueued in SQL (`leasehold.enqueue(…)` from psql) are processed, then SIGTERM
//     stops it gracefully with exit code 0 (plain npx under dash: see runWorkerCli);
//   - what must be refused is: a Date payload at enqueue (PayloadValidationError, nothing sent)
//     and in the types (tsc fails naming the field), an unknown createWorker option (ConfigError).
// Tarballs: `--tarballs <dir>` (what check:packages left in .tmp/packages), else packed afresh.
// Kysely: `--kysely 0.28.0,0.29.0` instead of the latest 0.28 and 0.29.
// Database: DATABASE_URL (one new database per run), else a throwaway PostgreSQL.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type ThrowawayPostgres } from '@leasehold/core/testing';
import { packAll, readManifest, ROOT, tarballsIn } from './packages.js';

/** The Kysely minors of the peer range (latest patch of each); `--kysely 0.28.0,0.29.0` tests others. */
const KYSELY_VERSIONS = option('--kysely')?.split(',') ?? ['0.28', '0.29'];
/** The Quick Start's programs, and what each prints once it has done its work. */
const PROGRAMS = [
  { file: 'tasks', done: /sending the welcome mail to ada@example\.com/ },
  { file: 'outbox', done: /publishing OrderPlaced for order \d+/ },
] as const;
const VARIANTS = [
  { name: 'ESM TypeScript (tsx)', command: (file: string) => ['node', '--import', 'tsx', `src/${file}.ts`] },
  { name: 'ESM JavaScript (tsc output)', command: (file: string) => ['node', `dist/${file}.js`] },
  { name: 'CommonJS (tsc output)', command: (file: string) => ['node', `dist/${file}.cjs`] },
] as const;
/**
 * How `leasehold worker` is started: by npx as users type it; by npx with bash as npm's script
 * shell, which runs the command itself (dash, Debian's /bin/sh, keeps a shell in between that
 * does not pass SIGTERM on); by the installed bin, as a container's command.
 */
const WORKER_COMMANDS = [
  { name: 'npx leasehold', command: ['npx', '--no-install', 'leasehold'], exitZero: false },
  { name: 'npx --script-shell=bash leasehold', command: ['npx', '--no-install', '--script-shell=bash', 'leasehold'], exitZero: true },
  { name: 'node_modules/.bin/leasehold', command: [join('node_modules', '.bin', 'leasehold')], exitZero: true },
] as const;
const DONE_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 10_000;

const tarballDir = option('--tarballs');
const packedHere = tarballDir ? undefined : mkdtempSync(join(tmpdir(), 'leasehold-tgz-'));
const tarballs = packedHere ? packAll(packedHere) : tarballsIn(resolve(tarballDir!));
if (tarballs.length === 0) throw new Error('no tarballs to install');
const devPins = readManifest(ROOT).devDependencies ?? {};
const pin = (name: string) => `${name}@${devPins[name] ?? 'latest'}`;

const work = mkdtempSync(join(tmpdir(), 'leasehold-consumer-'));
let server: ThrowawayPostgres | undefined;
let adminUrl: string | undefined;
const created: string[] = [];
const results: string[] = [];
let failed = false;
try {
  adminUrl = process.env.DATABASE_URL ?? (server = await startEmbeddedPostgres()).connectionString;
  let databases = 0;
  for (const kysely of KYSELY_VERSIONS) {
    const app = join(work, `app-kysely-${kysely}`);
    step(`fresh application ${app}: the ${tarballs.length} tarballs, kysely@${kysely}, pg`);
    createApp(app, kysely);
    const installed = readManifest(join(app, 'node_modules', 'kysely')).version;
    step(`tsc --strict (NodeNext, skipLibCheck off): ESM src/*.ts and CommonJS src/*.cts against kysely ${installed}`);
    run('npx', ['--no-install', 'tsc', '-p', 'tsconfig.json', '--strict'], app);
    step('every entry point, with import and with require');
    checkEntryPoints(app);
    for (const program of PROGRAMS) {
      for (const variant of VARIANTS) {
        const url = await freshDatabase(adminUrl, `lh_consumer_${process.pid}_${++databases}`);
        const label = `kysely ${installed} · ${program.file} · ${variant.name}`;
        try {
          const ms = await runQuickStart(app, variant.command(program.file), program.done, url);
          results.push(`ok    ${label}: processed, then exit 0 ${ms} ms after SIGTERM`);
        } catch (error) {
          failed = true;
          results.push(`FAIL  ${label}: ${(error as Error).message}`);
        }
      }
    }
    step('npx leasehold, from the installed @leasehold/cli');
    const url = await freshDatabase(adminUrl, `lh_consumer_${process.pid}_${++databases}`);
    run('npx', ['--no-install', 'leasehold', 'migrate', '--database-url', url], app);
    run('npx', ['--no-install', 'leasehold', 'stats', '--database-url', url], app);
    results.push(`ok    kysely ${installed} · npx leasehold migrate, stats`);
    for (const via of WORKER_COMMANDS) {
      step(`${via.name} worker --tasks worker/tasks.mjs: enqueue() and SQL enqueue, then SIGTERM`);
      const workerUrl = await freshDatabase(adminUrl, `lh_consumer_${process.pid}_${++databases}`);
      await check(`kysely ${installed} · ${via.name} worker --tasks`, () => runWorkerCli(app, workerUrl, via));
    }
    step('refused: a Date payload (at enqueue, and by tsc), an unknown createWorker option');
    await check(`kysely ${installed} · refusals`, async () => checkRefusals(app));
  }
} catch (error) {
  failed = true;
  results.push(`FAIL  ${(error as Error).message}`);
} finally {
  if (adminUrl && !server) await dropDatabases(adminUrl);
  await server?.stop();
}
console.log(`\n${results.join('\n')}`);
if (failed) {
  console.error(`\ntest:consumer failed; the applications are kept in ${work}`);
  process.exit(1);
}
rmSync(work, { recursive: true, force: true });
if (packedHere) rmSync(packedHere, { recursive: true, force: true });
console.log('\ntest:consumer: the Quick Start works from the packed packages, as ESM TypeScript, ESM JavaScript and CommonJS');

/** Runs `fn`; its text (or its error) becomes an ok (or FAIL) line of the results. */
async function check(label: string, fn: () => Promise<string>): Promise<void> {
  try {
    results.push(`ok    ${label}: ${await fn()}`);
  } catch (error) {
    failed = true;
    results.push(`FAIL  ${label}: ${(error as Error).message}`);
  }
}

/**
 * `leasehold worker --tasks worker/tasks.mjs --migrate`, started as `via` says: once it runs, a
 * task is enqueued by a script of the application and one by SQL (psql; pg from the application
 * where psql is missing); both must be processed, then SIGTERM, sent to the started process alone
 * as `kill <pid>` or a container stop sends it, must stop the worker gracefully ("stopped" after
 * its 2 tasks) with exit code 0. Plain npx, where /bin/sh is dash (Debian, Ubuntu): the signal
 * ends npm and its shell without reaching the CLI, and npm reports it as its own end; the CLI
 * then notices it lost its parent and stops the same way, which is what is checked there.
 */
async function runWorkerCli(app: string, databaseUrl: string, via: (typeof WORKER_COMMANDS)[number]): Promise<string> {
  const args = ['worker', '--tasks', 'worker/tasks.mjs', '--migrate', '--database-url', databaseUrl];
  const [command, ...prefix] = via.command;
  const child = spawn(command.startsWith('node_modules') ? join(app, command) : command, [...prefix, ...args], {
    cwd: app,
    env: { ...process.env, DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
    // a group of its own, so a failed run can end npx and the CLI under it together
    detached: true,
  });
  let output = '';
  let ended = false;
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const waiter of waiters) waiter();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const closed = new Promise<number | NodeJS.Signals | null>((resolve, reject) => {
    child.once('error', reject);
    // 'close' comes once every holder of the output pipes, the CLI under npx included, has ended
    child.once('close', (code, signal) => {
      ended = true;
      resolve(code ?? signal);
    });
  });
  const waitFor = (pattern: RegExp, ms: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`no ${pattern} within ${ms / 1000} s; output:\n${output}`)), ms);
      const seen = () => pattern.test(output) && finish();
      function finish(error?: Error) {
        clearTimeout(timer);
        waiters.delete(seen);
        if (error) reject(error);
        else resolve();
      }
      waiters.add(seen);
      void closed.then(() => finish(new Error(`exited before ${pattern}; output:\n${output}`)));
      seen();
    });
  try {
    await waitFor(/leasehold worker: running consumer-greet from worker\/tasks\.mjs/, DONE_TIMEOUT_MS);
    await runAsync('node', ['checks/enqueue.mjs'], app, databaseUrl);
    const sql = "SELECT leasehold.enqueue('consumer-greet', '{\"name\": \"sql\"}'::jsonb)";
    const viaPsql = spawnSync('psql', [databaseUrl, '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
    if (viaPsql.error === undefined && viaPsql.status !== 0) throw new Error(`psql: ${viaPsql.stderr}`);
    const by = viaPsql.error === undefined ? 'psql' : 'pg (no psql here)';
    if (viaPsql.error !== undefined) await runAsync('node', ['checks/sql-enqueue.mjs', sql], app, databaseUrl);
    await waitFor(/greeted node/, DONE_TIMEOUT_MS);
    await waitFor(/greeted sql/, DONE_TIMEOUT_MS);
    const signalledAt = Date.now();
    child.kill('SIGTERM');
    const code = await Promise.race([closed, new Promise<'late'>((r) => setTimeout(() => r('late'), EXIT_TIMEOUT_MS).unref())]);
    if (code === 'late') throw new Error(`no exit within ${EXIT_TIMEOUT_MS / 1000} s of SIGTERM; output:\n${output}`);
    if (!/leasehold worker: stopped \(2 done, 0 retried, 0 dead/.test(output)) throw new Error(`no graceful stop after SIGTERM; output:\n${output}`);
    const npxEnd = !via.exitZero && code === 'SIGTERM' && /npm ended without passing its signal on: stopping/.test(output);
    if (code !== 0 && !npxEnd) throw new Error(`exited with ${code} after SIGTERM; output:\n${output}`);
    const how = code === 0 ? 'exit 0' : 'a graceful stop (npx itself ended by SIGTERM: its sh did not pass the signal on)';
    return `processed a task from enqueue() and one from SQL (${by}), then ${how} ${Date.now() - signalledAt} ms after SIGTERM`;
  } finally {
    if (!ended) process.kill(-child.pid!, 'SIGKILL');
  }
}

/** A Date payload is refused at enqueue and by tsc; an unknown createWorker option at run time. */
function checkRefusals(app: string): string {
  const runtime = run('node', ['checks/refusals.mjs'], app);
  for (const expected of [/enqueue refused: PayloadValidationError: .*payload\.when: a Date is not JSON/, /createWorker refused: ConfigError: unknown option `lease` for createWorker/]) {
    if (!expected.test(runtime)) throw new Error(`expected ${expected} from checks/refusals.mjs; got:\n${runtime}`);
  }
  const tsc = spawnSync('npx', ['--no-install', 'tsc', '-p', 'checks/tsconfig.json'], {
    cwd: app,
    encoding: 'utf8',
  });
  const said = tsc.stdout + tsc.stderr;
  if (tsc.status === 0) throw new Error('tsc accepted defineTask<{ when: Date }>');
  if (!/the payload type is not JSON/.test(said) || !/when: "a Date is not JSON/.test(said)) throw new Error(`tsc failed, but not naming the field:\n${said}`);
  return 'a Date payload by enqueue (PayloadValidationError) and by tsc (naming `when`), lease on createWorker (ConfigError)';
}

/** The worker's task module and the scripts around it, as an application would write them. */
function writeFixtures(app: string): void {
  mkdirSync(join(app, 'worker'));
  mkdirSync(join(app, 'checks'));
  writeFileSync(
    join(app, 'worker', 'tasks.mjs'),
    `import { defineTask } from '@leasehold/core';

export const greet = defineTask('consumer-greet', {
  handler: async ({ name }) => console.log(\`greeted \${name}\`),
});
`,
  );
  writeFileSync(
    join(app, 'checks', 'enqueue.mjs'),
    `import pg from 'pg';
import { defineTask, enqueue } from '@leasehold/core';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
await enqueue(pool, defineTask('consumer-greet', { handler: () => {} }), { name: 'node' });
await pool.end();
`,
  );
  writeFileSync(
    join(app, 'checks', 'sql-enqueue.mjs'),
    `import pg from 'pg';

const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
await client.query(process.argv[2]);
await client.end();
`,
  );
  writeFileSync(
    join(app, 'checks', 'refusals.mjs'),
    `import pg from 'pg';
import { createWorker, defineTask, enqueue, isLeaseholdError } from '@leasehold/core';

// nothing here reaches the database: both are refused before any statement
const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
const report = defineTask('report', { handler: () => {} });
try {
  await enqueue(pool, report, { when: new Date() });
  console.log('enqueue accepted a Date payload');
} catch (error) {
  if (!isLeaseholdError(error, 'PAYLOAD_VALIDATION')) throw error;
  console.log(\`enqueue refused: \${error.name}: \${error.message}\`);
}
try {
  createWorker({ pool, tasks: [report], lease: '10s' });
  console.log('createWorker accepted lease');
} catch (error) {
  if (!isLeaseholdError(error, 'CONFIG')) throw error;
  console.log(\`createWorker refused: \${error.name}: \${error.message}\`);
}
await pool.end();
`,
  );
  // must NOT compile: a Date is not JSON (tsc is expected to fail, naming the field)
  writeFileSync(
    join(app, 'checks', 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: ['node'] }, files: ['date-payload.ts'] }),
  );
  writeFileSync(
    join(app, 'checks', 'date-payload.ts'),
    `import { defineTask } from '@leasehold/core';

export const report = defineTask<{ when: Date }>('report', { handler: async () => {} });
`,
  );
}

/** Runs a script of the application with DATABASE_URL; rejects when it fails. */
function runAsync(command: string, args: string[], cwd: string, databaseUrl: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`))));
  });
}

/** A new folder with its own package.json, the tarballs and the tools a TypeScript user installs. */
function createApp(app: string, kysely: string): void {
  mkdirSync(join(app, 'src'), { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer-app', private: true, type: 'module' }, null, 2));
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', outDir: 'dist', rootDir: 'src', types: ['node'], skipLibCheck: false },
        include: ['src'],
      },
      null,
      2,
    ),
  );
  writeFixtures(app);
  for (const { file } of PROGRAMS) {
    const source = join(ROOT, 'examples/src/quick-start', `${file}.ts`);
    copyFileSync(source, join(app, 'src', `${file}.ts`)); // ESM: package.json says "type": "module"
    copyFileSync(source, join(app, 'src', `${file}.cts`)); // the same code as CommonJS: tsc emits require()
  }
  const packages = [...tarballs, `kysely@${kysely}`, pin('pg'), pin('typescript'), pin('tsx'), pin('@types/node'), pin('@types/pg')];
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...packages], app);
}

/** Loads every entry point of every installed @leasehold library (its `exports`), with require and with import. */
function checkEntryPoints(app: string): void {
  const scope = join(app, 'node_modules', '@leasehold');
  const entries = readdirSync(scope).flatMap((dir) => {
    const manifest = JSON.parse(readFileSync(join(scope, dir, 'package.json'), 'utf8')) as { name: string; exports?: Record<string, unknown> };
    return Object.keys(manifest.exports ?? {})
      .filter((key) => key !== './package.json')
      .map((key) => manifest.name + key.slice(1));
  });
  console.log(entries.join(', '));
  const count = (how: string) => `console.log(${JSON.stringify(how)}, mods.map((m) => Object.keys(m).length).join(' / '), 'exports')`;
  run('node', ['-e', `const mods = ${JSON.stringify(entries)}.map((e) => require(e)); ${count('require:')}`], app, true);
  run('node', ['--input-type=module', '-e', `const mods = await Promise.all(${JSON.stringify(entries)}.map((e) => import(e))); ${count('import: ')}`], app, true);
}

/** Starts a Quick Start program, waits until it did its work, sends SIGTERM; resolves with ms to exit 0. */
function runQuickStart(app: string, [command, ...args]: readonly string[], done: RegExp, databaseUrl: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command!, args, { cwd: app, env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let signalledAt = 0;
    const fail = (why: string) => {
      child.kill('SIGKILL');
      reject(new Error(`${why}; output:\n${output}`));
    };
    let timer = setTimeout(() => fail(`did not process its task within ${DONE_TIMEOUT_MS / 1000} s`), DONE_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (signalledAt || !done.test(output)) return;
      signalledAt = Date.now();
      clearTimeout(timer);
      timer = setTimeout(() => fail(`no exit within ${EXIT_TIMEOUT_MS / 1000} s of SIGTERM`), EXIT_TIMEOUT_MS);
      child.kill('SIGTERM');
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (!signalledAt) return fail(`exited (${signal ?? code}) before processing its task`);
      if (code !== 0) return fail(`exited with ${signal ?? code} after SIGTERM`);
      resolve(Date.now() - signalledAt);
    });
  });
}

/** Creates a database for one run (dropped at the end by {@link dropDatabases}); returns its URL. */
async function freshDatabase(adminUrl: string, name: string): Promise<string> {
  await admin(adminUrl, `CREATE DATABASE ${name}`);
  created.push(name);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropDatabases(adminUrl: string): Promise<void> {
  for (const name of created.splice(0)) await admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

async function admin(adminUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

function run(command: string, args: string[], cwd: string, echo = false): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (echo || result.status !== 0) process.stdout.write(result.stdout + result.stderr);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${result.status} in ${cwd}`);
  return result.stdout;
}

function option(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
}

function step(text: string): void {
  console.log(`\n--> ${text}`);
}
