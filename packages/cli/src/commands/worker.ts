import { migrate as migrateOutbox } from '@leasehold/outbox';
import { createWorker, isLeaseholdError, type ConfigError, type DatabaseNotReadyError, type Worker } from '@leasehold/core';
import { CommandError, UsageError } from '../errors.js';
import { EXIT_CODES } from '../exit-codes.js';
import { formatAge } from '../format/age.js';
import type { LoadedTasks } from '../task-modules.js';
import { describeCounts, stderrLogger, Tally } from '../worker-output.js';
import type { CommandContext, CommandHandler } from './context.js';

/** How often a running worker prints what finished meanwhile (nothing when nothing did). */
const SUMMARY_EVERY_MS = 10_000;

/**
 * `leasehold worker --tasks <module or folder>`: runs the task definitions and schedules the
 * modules export (loaded by run.ts before it connects) on a `createWorker`, until SIGTERM or
 * SIGINT. Then it stops as `worker.stop()` does: no new claims, running handlers get
 * `--shutdown-timeout` (30 s) to finish, the rest are aborted and handed back; exit code 0.
 * A second signal more than 2 s later ends the process at once (main.ts), exit code 130.
 */
export function workerCommand(loaded: LoadedTasks): CommandHandler {
  return async (ctx) => {
    const { invocation, pool, signal } = ctx;
    const args = invocation.worker;
    const say = sayer(ctx);
    if (args.migrate) {
      // what `leasehold migrate` does: core's tables and the outbox's
      const { applied } = await migrateOutbox(pool, { schema: invocation.schema });
      ctx.io.err(`leasehold: schema "${invocation.schema}" ${applied.length > 0 ? `migrated: ${applied.join(', ')}` : 'is up to date'}`);
    }
    const worker = configured(ctx, loaded);
    const tally = new Tally(worker);
    const timeout = args.shutdownTimeoutMs;
    const stopped = new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const reason = signal.reason instanceof Error ? signal.reason.message : 'stop requested';
        say({ event: 'stopping', running: worker.runningCount, shutdownTimeoutMs: timeout },
          `${reason}: stopping; ${worker.runningCount} running task(s) may finish within ${formatAge(timeout)} (signal again after 2 s to exit at once)`);
        worker.stop({ timeout }).then(resolve, reject);
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      // a signal during start() stops it there: start() then resolves without starting
      await worker.start();
    } catch (error) {
      throw explainStart(error);
    }
    if (!signal.aborted) say(started(loaded, worker, args.concurrency ?? 8), startLine(loaded, worker, invocation.worker.tasks, args.concurrency ?? 8));
    const summaries = setInterval(() => {
      const recent = tally.takeRecent();
      if (recent) say({ event: 'summary', periodMs: SUMMARY_EVERY_MS, ...recent }, `last ${formatAge(SUMMARY_EVERY_MS)}: ${describeCounts(recent)}`);
    }, SUMMARY_EVERY_MS);
    try {
      await stopped;
    } finally {
      clearInterval(summaries);
    }
    say({ event: 'stopped', ...tally.total }, `stopped (${describeCounts(tally.total)} since it started)`);
    return EXIT_CODES.ok;
  };
}

/** Lifecycle lines on stdout: text, or one JSON object per line with `--json`. */
function sayer({ invocation, io }: CommandContext): (json: object, text: string) => void {
  return (json, text) => io.out(invocation.json ? JSON.stringify(json) : `leasehold worker: ${text}`);
}

function configured({ invocation, pool, io }: CommandContext, loaded: LoadedTasks): Worker {
  const args = invocation.worker;
  try {
    return createWorker({
      pool,
      tasks: loaded.tasks,
      schedules: loaded.schedules,
      schema: invocation.schema,
      concurrency: args.concurrency,
      pollInterval: args.pollIntervalMs,
      // left out unless given: createWorker's defaults, which depend on each other
      ...(args.noListen ? { listen: false } : {}),
      ...(args.listenConnectionString === undefined ? {} : { listenConnectionString: args.listenConnectionString }),
      ...(args.noPreparedStatements ? { noPreparedStatements: true } : {}),
      logger: stderrLogger(io),
    });
  } catch (error) {
    // the options were checked by args.ts; what is left is a combination core refuses
    if (isLeaseholdError(error, 'CONFIG')) throw new UsageError((error as ConfigError).message.replaceAll('`', ''));
    throw error;
  }
}

function explainStart(error: unknown): unknown {
  if (!isLeaseholdError(error, 'DATABASE_NOT_READY')) return error;
  const e = error as DatabaseNotReadyError;
  const behind = e.reason === 'not-migrated' || e.reason === 'schema-outdated';
  return new CommandError(behind ? e.message.replace('or call migrate()', 'or give --migrate') : e.message);
}

function started(loaded: LoadedTasks, worker: Worker, concurrency: number): object {
  return {
    event: 'started',
    tasks: loaded.tasks.map((t) => t.name),
    schedules: loaded.schedules.map((s) => s.name),
    files: loaded.files,
    owner: worker.owner,
    concurrency,
  };
}

function startLine(loaded: LoadedTasks, worker: Worker, from: string, concurrency: number): string {
  const tasks = loaded.tasks.map((t) => t.name).join(', ');
  const schedules = loaded.schedules.length === 0 ? '' : `, schedule(s) ${loaded.schedules.map((s) => s.name).join(', ')}`;
  return `running ${tasks}${schedules} from ${from} · concurrency ${concurrency} · owner ${worker.owner} · SIGTERM or Ctrl-C stops it`;
}
