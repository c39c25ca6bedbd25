import { checkUrl } from './database-target.js';
import { UsageError } from './errors.js';
import { durationOf } from './option-values.js';

/** What `leasehold worker` was told on its command line. */
export interface WorkerArgs {
  /** `--tasks`: a module file or a folder of them, as typed (resolved from the working directory). */
  readonly tasks: string;
  /** `--concurrency`: most handlers at once. @defaultValue createWorker's (8) */
  readonly concurrency: number | undefined;
  /** `--poll-interval`, in ms. @defaultValue createWorker's (2 s) */
  readonly pollIntervalMs: number | undefined;
  /** `--no-listen`: poll only. */
  readonly noListen: boolean;
  /** `--listen-connection-string`: a direct connection for LISTEN behind a pooler. */
  readonly listenConnectionString: string | undefined;
  /** `--no-prepared-statements`: behind PgBouncer in transaction mode (or another pooler). */
  readonly noPreparedStatements: boolean;
  /** `--migrate`: run `leasehold migrate` first. */
  readonly migrate: boolean;
  /** `--shutdown-timeout`, in ms: how long running handlers may finish after SIGTERM. @defaultValue 30 s */
  readonly shutdownTimeoutMs: number;
}

/** The option values `worker` reads (parseArgs' names). */
export interface WorkerValues {
  tasks?: string;
  concurrency?: string;
  'poll-interval'?: string;
  'no-listen'?: boolean;
  'listen-connection-string'?: string;
  'no-prepared-statements'?: boolean;
  migrate?: boolean;
  'shutdown-timeout'?: string;
}

/** Checks `worker`'s options; a mistake is a {@link UsageError} (exit code 2). */
export function workerArgsOf(values: WorkerValues, isWorker: boolean): WorkerArgs {
  if (isWorker && (values.tasks === undefined || values.tasks.trim() === '')) {
    throw new UsageError('worker needs --tasks <module or folder>, e.g. "leasehold worker --tasks ./dist/tasks"');
  }
  if (values['no-listen'] && values['listen-connection-string'] !== undefined) {
    throw new UsageError('give either --no-listen or --listen-connection-string, not both');
  }
  return {
    tasks: values.tasks ?? '',
    concurrency: values.concurrency === undefined ? undefined : concurrencyOf(values.concurrency),
    pollIntervalMs: values['poll-interval'] === undefined ? undefined : durationOf(values['poll-interval'], '--poll-interval', false),
    noListen: values['no-listen'] === true,
    listenConnectionString:
      values['listen-connection-string'] === undefined ? undefined : checkUrl(values['listen-connection-string'], '--listen-connection-string'),
    noPreparedStatements: values['no-prepared-statements'] === true,
    migrate: values.migrate === true,
    shutdownTimeoutMs: values['shutdown-timeout'] === undefined ? 30_000 : durationOf(values['shutdown-timeout'], '--shutdown-timeout', true),
  };
}

function concurrencyOf(value: string): number {
  const n = Number(value);
  // createWorker's range
  if (!/^\d+$/.test(value) || n < 1 || n > 10_000) throw new UsageError(`--concurrency must be a whole number from 1 to 10000, got "${value}"`);
  return n;
}
