import { ConfigError } from '../errors.js';
import { checkInteger } from '../input/integer.js';
import { INTEGER_RANGES } from '../input/limits.js';
import { checkName } from '../input/text.js';
import { isLimitDefinition, type LimitDefinition } from '../limits/define-limit.js';
import type { HandlerContext } from '../worker/handler-context.js';
import { runSettings, type RunOptions, type RunSettings } from '../worker/settings.js';
import type { EnqueueOptionsArg } from './enqueue-args.js';

/** Anything with a `parse(input)` that returns the payload or throws, e.g. a zod schema. */
export interface PayloadValidator<P> {
  /** Returns the checked payload, or throws saying what is wrong with `input`. */
  parse(input: unknown): P;
}

/** What a task handler gets besides its payload. */
export interface TaskContext<C = unknown> extends HandlerContext {
  /** The task as claimed. `id` is stable across retries: use it as an idempotency key. */
  readonly task: {
    readonly id: string;
    readonly name: string;
    readonly attempts: number;
    readonly maxAttempts: number;
    readonly leaseVersion: number;
    readonly createdAt: Date;
  };
  /** What an earlier attempt saved with `checkpoint()`, or null on a fresh start. */
  readonly lastCheckpoint: C | null;
  /**
   * Saves progress with a fenced write, so an attempt after a crash resumes from it. Throws
   * `LeaseLostError` (and aborts the signal) when the lease moved on.
   */
  checkpoint(state: C): Promise<void>;
  /**
   * Enqueues a follow-up task that commits atomically with this task's completion: if this
   * task fails, or its lease is lost, the follow-up is never written.
   */
  enqueue<Q, O extends boolean = boolean>(task: TaskDefinition<Q, unknown, O>, payload: NoInfer<Q>, ...options: EnqueueOptionsArg<O>): void;
}

/** Options of {@link defineTask}. */
export interface TaskOptions<P, C = unknown> extends RunOptions {
  /** Runs the task. Throw `PermanentError`, `DeferError` or anything else (retryable). */
  handler: (payload: P, ctx: TaskContext<C>) => Promise<void> | void;
  /** Checks payloads at enqueue and again before running. */
  validate?: PayloadValidator<P>;
  /** Attempts before the task goes dead (a crash counts). @defaultValue 12 */
  maxAttempts?: number;
  /** Higher runs first. @defaultValue 0 */
  priority?: number;
  /** Tasks of one `groupKey` run one at a time in enqueue order; `enqueue` then requires a `groupKey`. @defaultValue false */
  ordered?: boolean;
  /**
   * The limit (`defineLimit`) its tasks run under, alone or with other task types: how many run
   * at once and start per period across all workers. A keyed limit makes `enqueue` require a
   * `limitKey`. @defaultValue none
   */
  limit?: LimitDefinition;
}

/** A checked task definition: what `enqueue` and `createWorker` take. */
export interface TaskDefinition<P, C = unknown, O extends boolean = boolean> {
  readonly name: string;
  // method syntax on purpose: a list of differently typed tasks is a TaskDefinition<unknown>[]
  /** Runs one task; what it throws decides the outcome (see {@link TaskOptions.handler}). */
  handler(payload: P, ctx: TaskContext<C>): Promise<void> | void;
  readonly validate: PayloadValidator<P> | undefined;
  readonly maxAttempts: number;
  readonly priority: number;
  /** Tasks of one `groupKey` run one at a time; `true` makes `enqueue` require a `groupKey`. */
  readonly ordered: O;
  /** The limit its tasks run under, or null. */
  readonly limit: LimitDefinition | null;
  readonly settings: RunSettings;
}

/**
 * Defines a task type. The payload type flows from here into `enqueue` and the handler.
 *
 * @example
 * const sendEmail = defineTask<{ to: string }>('send-email', {
 *   lease: '30s',
 *   handlerTimeout: '20s',
 *   handler: async ({ to }, ctx) => mailer.send(to, { idempotencyKey: ctx.task.id }),
 * });
 */
// an ordered task's definition says so in its type, so that enqueue requires its groupKey
export function defineTask<P, C = unknown>(name: string, options: TaskOptions<P, C> & { ordered: true }): TaskDefinition<P, C, true>;
export function defineTask<P, C = unknown>(name: string, options: TaskOptions<P, C> & { ordered?: false }): TaskDefinition<P, C, false>;
export function defineTask<P, C = unknown>(name: string, options: TaskOptions<P, C>): TaskDefinition<P, C>;
export function defineTask<P, C = unknown>(name: string, options: TaskOptions<P, C>): TaskDefinition<P, C> {
  checkName(name, 'name', 'the task name');
  if (typeof options?.handler !== 'function') {
    throw new ConfigError('handler', `Expected \`handler\` of task "${name}" to be a function`);
  }
  if (options.validate !== undefined && typeof options.validate.parse !== 'function') {
    throw new ConfigError('validate', `Expected \`validate\` of task "${name}" to have a parse(input) method`);
  }
  if (options.limit !== undefined && !isLimitDefinition(options.limit)) {
    throw new ConfigError('limit', `Expected \`limit\` of task "${name}" to be made by defineLimit()`);
  }
  return Object.freeze({
    name,
    handler: options.handler,
    validate: options.validate,
    maxAttempts: checkInteger(options.maxAttempts ?? 12, 'maxAttempts', INTEGER_RANGES.maxAttempts),
    priority: checkInteger(options.priority ?? 0, 'priority', INTEGER_RANGES.priority),
    ordered: options.ordered ?? false,
    limit: options.limit ?? null,
    settings: runSettings(options),
  });
}
