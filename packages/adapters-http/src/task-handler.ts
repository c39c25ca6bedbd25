import type { Claimed, TaskRow } from '@leasehold/core';
import type { OutboxMessage, Publisher } from '@leasehold/outbox';
import { checkOptionKeys, optionKeys } from '@leasehold/core/internal';

/** Options of {@link publisherTaskHandler}. */
export interface PublisherTaskHandlerOptions<Row> {
  /**
   * Builds the message for a task. The default: id = task id (stable across retries), key =
   * group key or task id, eventType = task name, payload = task payload.
   */
  toMessage?: (task: Claimed<Row>) => OutboxMessage;
}

/** A core task handler: the worker passes its context, `dispatchOnce` passes none. */
export type PublishingTaskHandler<Row> = (task: Claimed<Row>, context?: { readonly signal?: AbortSignal }) => Promise<void>;

/**
 * Adapts a publisher to a core task handler, so a plain leased task can be delivered by
 * {@link httpPublisher}: the worker's `ctx.signal` (lease lost, shutdown) aborts the request,
 * and the publisher's `RetryableError` / `PermanentError` / `DeferError` drive the task.
 *
 * @example
 * const handle = publisherTaskHandler(httpPublisher({ url: 'https://example.com/hook' }));
 * createLeaseWorker({ pool, table: taskTable(), names: ['notify'], handle });
 */
export function publisherTaskHandler(publisher: Publisher, options?: PublisherTaskHandlerOptions<TaskRow>): PublishingTaskHandler<TaskRow>;
/** For a table of your own, say how a row becomes a message. */
export function publisherTaskHandler<Row>(
  publisher: Publisher,
  options: Required<PublisherTaskHandlerOptions<Row>>,
): PublishingTaskHandler<Row>;
export function publisherTaskHandler<Row>(
  publisher: Publisher,
  options: PublisherTaskHandlerOptions<Row> = {},
): PublishingTaskHandler<Row> {
  checkOptionKeys(options, TASK_HANDLER_OPTIONS);
  const toMessage = options.toMessage ?? (defaultMessage as unknown as (task: Claimed<Row>) => OutboxMessage);
  return async (task, context) => {
    // dispatchOnce passes no context: a signal that never fires stands in
    const signal = context?.signal ?? new AbortController().signal;
    await publisher.publish(toMessage(task), { signal });
  };
}

const TASK_HANDLER_OPTIONS = optionKeys<PublisherTaskHandlerOptions<unknown>>()('publisherTaskHandler', ['toMessage']);

function defaultMessage(task: Claimed<TaskRow>): OutboxMessage {
  return {
    id: task.id,
    key: task.groupKey ?? task.id,
    aggregateType: 'task',
    eventType: task.name,
    payload: task.payload,
    headers: {},
    attempts: task.attempts,
    createdAt: task.createdAt,
  };
}
