import { createRequire } from 'node:module';
import { DatabaseNotReadyError } from '@leasehold/core';
import { errorCode } from '@leasehold/core/internal';
import { migrate as migrateOutbox } from '@leasehold/outbox';
import { parseCommandLine, type Command, type Invocation } from './args.js';
import { cancelCommand } from './commands/cancel.js';
import { dashboardCommand } from './commands/dashboard.js';
import { deadListCommand } from './commands/dead-list.js';
import { deadResolveCommand } from './commands/dead-resolve.js';
import { migrateCommand } from './commands/migrate.js';
import { patchesCommand } from './commands/patches.js';
import { purgeCommand } from './commands/purge.js';
import { schedulesListCommand, schedulesPauseCommand } from './commands/schedules.js';
import { statsCommand } from './commands/stats.js';
import { taskForkCommand } from './commands/task-fork.js';
import { taskShowCommand } from './commands/task-show.js';
import { tasksListCommand } from './commands/tasks-list.js';
import { watchCommand } from './commands/watch.js';
import { workerCommand } from './commands/worker.js';
import type { CommandContext, CommandHandler } from './commands/context.js';
import { connect, type Connection } from './connect.js';
import { chooseDatabaseTarget, describeDatabaseUrl } from './database-target.js';
import { startEmbeddedServer, type EmbeddedServer } from './embedded-server.js';
import { CommandError, UsageError } from './errors.js';
import { EXIT_CODES, type ExitCode } from './exit-codes.js';
import type { Io } from './io.js';
import { leasedTables, type LeasedTables } from './leased-tables.js';
import { schemaTables } from './sql/schema-tables.js';
import { loadTaskModules } from './task-modules.js';
import { USAGE } from './usage.js';

// `worker` is made once its task modules are loaded (runCommand)
const HANDLERS: Readonly<Record<Exclude<Command, 'help' | 'version' | 'worker'>, CommandHandler>> = {
  migrate: migrateCommand,
  stats: statsCommand,
  watch: watchCommand,
  'dead list': deadListCommand,
  'dead retry': deadResolveCommand('retry'),
  'dead skip': deadResolveCommand('skip'),
  purge: purgeCommand,
  dashboard: dashboardCommand,
  'schedules list': schedulesListCommand,
  'schedules pause': schedulesPauseCommand(true),
  'schedules resume': schedulesPauseCommand(false),
  cancel: cancelCommand,
  'task show': taskShowCommand,
  'task fork': taskForkCommand,
  'tasks list': tasksListCommand,
  patches: patchesCommand,
};

/** What {@link run} needs from the process. */
export interface RunEnvironment {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly io: Io;
  /** Aborted on SIGINT / SIGTERM. */
  readonly signal: AbortSignal;
}

/**
 * Runs one `leasehold` command line and returns its exit code. Never throws: every failure is
 * written to `io.err` and mapped to an {@link EXIT_CODES exit code}.
 */
export async function run(argv: readonly string[], environment: RunEnvironment): Promise<ExitCode> {
  const { io, signal } = environment;
  let invocation: Invocation;
  try {
    invocation = parseCommandLine(argv);
    if (invocation.command === 'help') return (io.out(USAGE), EXIT_CODES.ok);
    if (invocation.command === 'version') return (io.out(version()), EXIT_CODES.ok);
    return await runCommand(invocation, environment);
  } catch (error) {
    return reportFailure(error, io, signal);
  }
}

async function runCommand(invocation: Invocation, { env, io, signal }: RunEnvironment): Promise<ExitCode> {
  const target = chooseDatabaseTarget(invocation, env);
  // before any connection: a wrong path or a module that throws fails without a database
  const handler =
    invocation.command === 'worker' ? workerCommand(await loadTaskModules(invocation.worker.tasks)) : HANDLERS[invocation.command as keyof typeof HANDLERS];
  let embedded: EmbeddedServer | undefined;
  let connection: Connection | undefined;
  try {
    if (target.kind === 'embedded') {
      io.err('leasehold: starting a throwaway PostgreSQL (it is removed when the command ends)…');
      embedded = await startEmbeddedServer();
      // stop at once on Ctrl-C: the terminal's SIGINT reaches the server too
      signal.addEventListener('abort', () => void embedded?.stop(), { once: true });
      if (signal.aborted) return EXIT_CODES.interrupted;
    }
    const url = target.kind === 'url' ? target.url : embedded!.url;
    connection = await connect(url);
    const from = target.kind === 'url' ? target.from : 'throwaway, --embedded';
    io.err(`leasehold: ${describeDatabaseUrl(url)} (${from}) · PostgreSQL ${connection.serverVersion} · schema ${invocation.schema}`);
    if (embedded) {
      await migrateOutbox(connection.pool, { schema: invocation.schema });
      io.err(`leasehold: migrated it; point other programs at it with DATABASE_URL=${embedded.url}`);
    }
    if (signal.aborted) return EXIT_CODES.interrupted;
    const ctx = context(invocation, connection, io, signal);
    return await handler(ctx);
  } finally {
    await connection?.pool.end().catch(() => undefined);
    if (embedded) {
      await embedded.stop();
      io.err('leasehold: stopped and removed the throwaway PostgreSQL');
    }
  }
}

function context(invocation: Invocation, connection: Connection, io: Io, signal: AbortSignal): CommandContext {
  let tables: Promise<LeasedTables> | undefined;
  return {
    invocation,
    pool: connection.pool,
    database: connection.database,
    io,
    signal,
    tables: () =>
      (tables ??= schemaTables(connection.pool, invocation.schema).then((present) =>
        leasedTables(invocation.schema, present, connection.database),
      )),
  };
}

// SQLSTATEs that mean "this schema is older than this CLI"
const BEHIND = new Set(['42P01', '42703']);

function reportFailure(error: unknown, io: Io, signal: AbortSignal): ExitCode {
  if (error instanceof UsageError) {
    io.err(`leasehold: ${error.message}\nRun "leasehold --help" for usage.`);
    return EXIT_CODES.usage;
  }
  if (signal.aborted) {
    io.err('leasehold: interrupted');
    return EXIT_CODES.interrupted;
  }
  if (error instanceof CommandError) {
    io.err(`leasehold: ${error.message}`);
    return EXIT_CODES.failure;
  }
  // the driver's error and code, also under core's DatabaseNotReadyError
  const driver = (error instanceof DatabaseNotReadyError && error.cause !== undefined ? error.cause : error) as { message?: string };
  const code = errorCode(error);
  if (code !== undefined && BEHIND.has(code)) {
    io.err(`leasehold: the schema does not match this version of leasehold (${driver.message}): run "leasehold migrate"`);
    return EXIT_CODES.failure;
  }
  io.err(`leasehold: ${(error as { message?: string }).message ?? String(error)}`);
  return EXIT_CODES.failure;
}

function version(): string {
  const manifest = createRequire(import.meta.url)('../package.json') as { version: string };
  return manifest.version;
}
