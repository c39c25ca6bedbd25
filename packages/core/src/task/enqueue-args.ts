import type { EnqueueItem } from './enqueue.js';
import type { EnqueueOptions } from './enqueue-options.js';

/** {@link EnqueueOptions} of an ordered task (`ordered: true`): the `groupKey` is required. */
export type OrderedEnqueueOptions = EnqueueOptions & { groupKey: string };

/**
 * The options argument of `enqueue` for a task whose `ordered` is `O`: required, with a
 * `groupKey`, for an ordered task; optional for an unordered one. A task known only as
 * `TaskDefinition<P>` (`ordered: boolean`) takes either, and `enqueue` checks at run time.
 */
export type EnqueueOptionsArg<O extends boolean> = O extends true ? [options: OrderedEnqueueOptions] : [options?: EnqueueOptions];

/** An item of `enqueueMany` for a task whose `ordered` is `O`: an ordered task's items need a `groupKey`. */
export type EnqueueItemFor<P, O extends boolean> = O extends true ? EnqueueItem<P> & { groupKey: string } : EnqueueItem<P>;
