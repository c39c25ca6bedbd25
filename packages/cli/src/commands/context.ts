import type pg from 'pg';
import type { Invocation } from '../args.js';
import type { ExitCode } from '../exit-codes.js';
import type { Io } from '../io.js';
import type { LeasedTables } from '../leased-tables.js';

/** What every command gets. */
export interface CommandContext {
  readonly invocation: Invocation;
  readonly pool: pg.Pool;
  /** Name of the connected database, for messages. */
  readonly database: string;
  readonly io: Io;
  /** Fires on SIGINT / SIGTERM. */
  readonly signal: AbortSignal;
  /** The schema's leased tables; throws `CommandError` when the schema is not migrated. */
  tables(): Promise<LeasedTables>;
}

/** A command: does its job, writes its output, returns the exit code. */
export type CommandHandler = (ctx: CommandContext) => Promise<ExitCode>;
