import { MAX_DELAY_MS, parseDuration } from '../duration.js';
import { ConfigError, PayloadValidationError } from '../errors.js';
import { checkInteger } from '../input/integer.js';
import { toJsonText } from '../input/json.js';
import { checkOptionKeys, optionKeys, unknownKey, unknownOption, type KnownOptions } from '../input/options.js';
import { INTEGER_RANGES } from '../input/limits.js';
import { checkKey } from '../input/text.js';
import { taskTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { isPgPool } from '../sql/transaction.js';
import { taskInsertMany, type InsertedTask, type TaskInsert } from '../sql/task-insert-many.js';
import { otel, otelNow } from '../telemetry/otel-api.js';
import { traceContextNow, type TraceContext } from '../telemetry/trace-headers.js';
import type { TaskDefinition } from './define-task.js';
import { sharedInsert } from './shared-insert.js';
import type { EnqueueItemFor, EnqueueOptionsArg } from './enqueue-args.js';
import type { EnqueueOptions } from './enqueue-options.js';

/** One task for {@link enqueueMany}. */
export interface EnqueueItem<P> extends Omit<EnqueueOptions, 'schema'> {
  payload: P;
}

/**
 * Adds a task. Pass the application's transaction (Kysely or `pg`) to make the task commit or
 * roll back with it. With a live `dedupKey` the existing task is returned (`inserted: false`).
 * An ordered task (`ordered: true`) needs a `groupKey`, so its options are required. On a `pg`
 * `Pool`, concurrent calls without a group or dedup key share statements (one round trip and one
 * commit for all that arrived while the previous one ran); each resolves once its task is
 * committed, and a statement that fails rejects every call it carried, writing none of them.
 *
 * @example
 * await db.transaction().execute(async (trx) => {
 *   await trx.insertInto('user').values(user).execute();
 *   await enqueue(trx, sendWelcome, { userId: user.id });
 * });
 */
export async function enqueue<P, O extends boolean = boolean, R = unknown>(
  executor: Executor,
  task: TaskDefinition<P, unknown, O, R>,
  payload: NoInfer<P>,
  ...[options = {}]: EnqueueOptionsArg<O>
): Promise<InsertedTask<R>> {
  const table = taskTable(options.schema);
  if (otelNow() === undefined) await otel(); // once per process: the optional API loads lazily
  const [row] = prepareInserts(task, [{ ...options, payload }], ENQUEUE_OPTIONS);
  if (row!.groupKey === null && row!.dedupKey === null && isPgPool(executor)) return (await sharedInsert(executor, table, row!)) as InsertedTask<R>;
  const [inserted] = await taskInsertMany(executor, table, [row!]);
  return inserted as InsertedTask<R>;
}

/**
 * Adds many tasks of one type in one statement (one notification). Returns their ids in input
 * order; an item whose `dedupKey` is live, or repeats an earlier item's key, gets that task's id.
 * With OpenTelemetry active, each task carries the caller's trace context to its worker's span.
 */
export async function enqueueMany<P, O extends boolean = boolean, R = unknown>(
  executor: Executor,
  task: TaskDefinition<P, unknown, O, R>,
  items: readonly EnqueueItemFor<NoInfer<P>, O>[],
  options: { schema?: string } = {},
): Promise<InsertedTask<R>[]> {
  checkOptionKeys(options, ENQUEUE_MANY_OPTIONS);
  const table = taskTable(options.schema);
  if (otelNow() === undefined) await otel(); // once per process: the optional API loads lazily
  const rows = prepareInserts(task, items);
  if (rows.length === 1) return (await taskInsertMany(executor, table, rows)) as InsertedTask<R>[];
  // PostgreSQL cannot resolve one conflict twice in a statement: send each live key once
  const firstByKey = new Map<string, number>();
  const unique: TaskInsert[] = [];
  const slot = rows.map((row) => {
    if (row.dedupKey === null) return unique.push(row) - 1;
    const seen = firstByKey.get(row.dedupKey);
    if (seen !== undefined) return seen;
    firstByKey.set(row.dedupKey, unique.length);
    return unique.push(row) - 1;
  });
  const inserted = await taskInsertMany(executor, table, unique);
  const answered = new Set<number>();
  return slot.map((i): InsertedTask<R> => {
    const row = inserted[i]!;
    if (answered.has(i)) return { id: row.id, inserted: false }; // a repeat of an earlier item's key
    answered.add(i);
    return row as InsertedTask<R>; // the phantom result type only
  });
}

const ENQUEUE_HINTS = {
  lease: 'lease belongs on defineTask',
  handlerTimeout: 'handlerTimeout belongs on defineTask',
  backoff: 'backoff belongs on defineTask',
  ordered: 'ordered belongs on defineTask',
  limit: 'the limit belongs on defineTask; enqueue takes its `limitKey`',
};
const ITEM_KEYS = ['payload', 'runAt', 'delay', 'priority', 'groupKey', 'dedupKey', 'limitKey', 'maxAttempts'] as const;
/** What `enqueue` and `ctx.enqueue` take: the options and, spread in with them, the payload. @internal */
export const ENQUEUE_OPTIONS = optionKeys<EnqueueOptions & { payload: unknown }>()('enqueue', [...ITEM_KEYS, 'schema'], ENQUEUE_HINTS);
// an item of enqueueMany or ctx.spawn: the schema is the call's, not the item's
const ITEM_OPTIONS = optionKeys<EnqueueItem<unknown>>()('an enqueueMany item', ITEM_KEYS, {
  ...ENQUEUE_HINTS,
  schema: 'schema belongs on the options of enqueueMany, the last argument',
});
const ENQUEUE_MANY_OPTIONS = optionKeys<{ schema?: string }>()('enqueueMany', ['schema'], {
  delay: 'give each item its own delay',
  priority: 'give each item its own priority',
});

/**
 * Checks items and turns them into rows for the insert statement, each with the active trace
 * context (see {@link traceContextNow}). `keys`: what an item may hold (`enqueue` passes its
 * options with the payload). @internal
 */
export function prepareInserts<P>(task: TaskDefinition<P>, items: readonly EnqueueItem<P>[], keys: KnownOptions = ITEM_OPTIONS): TaskInsert[] {
  const trace = traceContextNow();
  return items.map((item, i) => toInsert(task, item, trace, keys, i));
}

function toInsert<P>(task: TaskDefinition<P>, item: EnqueueItem<P>, trace: TraceContext | null, keys: KnownOptions, index: number): TaskInsert {
  if (typeof task?.name !== 'string' || typeof task.handler !== 'function') {
    throw new ConfigError('task', 'Expected a task made by defineTask()');
  }
  const unknown = unknownKey(item, keys);
  if (unknown !== undefined) throw unknownOption(unknown, keys, keys === ITEM_OPTIONS ? `items[${index}].` : '');
  const payloadJson = payloadText(task, validatePayload(task, item.payload));
  if (task.ordered && (item.groupKey === undefined || item.groupKey === '')) {
    throw new ConfigError('groupKey', `Task "${task.name}" is ordered: enqueue needs a \`groupKey\``);
  }
  // checked in this order (the first fault is the one reported); named fields, not a spread of
  // flowOf's result: a spread in this literal cost a few µs per enqueue
  const priority = item.priority === undefined ? task.priority : checkInteger(item.priority, 'priority', INTEGER_RANGES.priority);
  const groupKey = item.groupKey === undefined ? null : checkKey(item.groupKey, 'groupKey');
  const dedupKey = item.dedupKey === undefined ? null : checkKey(item.dedupKey, 'dedupKey');
  const maxAttempts = item.maxAttempts === undefined ? task.maxAttempts : checkInteger(item.maxAttempts, 'maxAttempts', INTEGER_RANGES.maxAttempts);
  const runAt = checkRunAt(item.runAt);
  const delayMs = item.delay === undefined ? 0 : parseDuration(item.delay, 'delay', { allowZero: true, max: MAX_DELAY_MS });
  const { flow, flowKey } = flowOf(task, item.limitKey);
  return {
    name: task.name,
    payloadJson,
    priority,
    groupKey,
    dedupKey,
    maxAttempts,
    runAt,
    delayMs,
    flow,
    flowKey,
    traceparent: trace?.traceparent ?? null,
    tracestate: trace?.tracestate ?? null,
    version: task.version ?? 1,
  };
}

// the payload's JSON text, checked where it enters: a payload jsonb or the publisher would
// refuse later must never reach the caller's transaction (see toJsonText)
function payloadText(task: TaskDefinition<unknown>, payload: unknown): string {
  try {
    return toJsonText(payload, 'payload');
  } catch (error) {
    throw new PayloadValidationError(task.name, error);
  }
}

/** The limit a task runs under and its key (see `defineLimit`), checked against the task's limit. */
function flowOf(task: TaskDefinition<unknown>, limitKey: unknown): { flow: string | null; flowKey: string | null } {
  const limit = task.limit ?? null;
  if (limit === null) {
    if (limitKey !== undefined) throw new ConfigError('limitKey', `Task "${task.name}" runs under no limit: \`limitKey\` has nothing to count`);
    return { flow: null, flowKey: null };
  }
  if (!limit.keyed) {
    if (limitKey !== undefined) throw new ConfigError('limitKey', `Limit "${limit.name}" of task "${task.name}" has no per-key bound: \`limitKey\` has nothing to count`);
    return { flow: limit.name, flowKey: '' };
  }
  if (limitKey === undefined) throw new ConfigError('limitKey', `Limit "${limit.name}" of task "${task.name}" counts per key: enqueue needs a \`limitKey\``);
  return { flow: limit.name, flowKey: checkKey(limitKey, 'limitKey') };
}

function checkRunAt(runAt: unknown): Date | null {
  if (runAt === undefined) return null;
  if (!(runAt instanceof Date && Number.isFinite(runAt.getTime()))) throw new ConfigError('runAt', 'Expected `runAt` to be a valid Date');
  return runAt;
}

/** Runs the task's validator, turning its failure into a `PayloadValidationError`. @internal */
export function validatePayload<P>(task: TaskDefinition<P>, payload: unknown): P {
  if (!task.validate) return payload as P;
  try {
    return task.validate.parse(payload);
  } catch (error) {
    throw new PayloadValidationError(task.name, error);
  }
}
