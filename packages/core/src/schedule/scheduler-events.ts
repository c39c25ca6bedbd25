/** What a scheduler reports, as `noun:verb` events with one payload object each. */
export interface SchedulerEventMap {
  /** A tick of `name` enqueued its task (`taskId`); `tick` is when it was due. */
  'schedule:fired': [{ name: string; tick: Date; taskId: string }];
  /** Due ticks of `name` were passed over: missed beyond `catchUp`, or while paused. */
  'schedule:skipped': [{ name: string; ticks: number; paused: boolean }];
  /** A tick could not be fired (database, payload); it is tried again, or skipped if its payload is bad. */
  'scheduler:error': [{ name: string | null; error: Error }];
}

/** Every event of {@link SchedulerEventMap}, which a worker with schedules passes on as its own. @internal */
export const SCHEDULER_EVENTS = ['schedule:fired', 'schedule:skipped', 'scheduler:error'] as const satisfies readonly (keyof SchedulerEventMap)[];
