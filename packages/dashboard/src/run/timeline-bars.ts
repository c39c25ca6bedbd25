import type { TaskInfo, TimelineEntry } from '@leasehold/core';
import { formatTime } from '../views/format.js';

type StepEntry = Extract<TimelineEntry, { type: 'step' }>;

/** What a bar of the run's timeline stands for. */
export type BarKind = 'step' | 'db' | 'sleep' | 'wait' | 'spawn' | 'patch' | 'event' | 'signal' | 'child';

/** One bar of a run's timeline: a recorded call, a signal or a child, over time. */
export interface TimelineBar {
  readonly kind: BarKind;
  readonly name: string;
  readonly start: Date;
  readonly end: Date;
  /**
   * The start is not recorded (steps, database steps, spawns, patches and events are recorded
   * once, when they end): the bar starts where the same claim's previous record ended, so its
   * length is at most the call's duration, or is a point when there is no such record.
   */
  readonly startInferred: boolean;
  /** Still under way (a sleep or wait, a pending signal, an unfinished child): ends now. */
  readonly open: boolean;
  /** The claim (lease version) that recorded it; null for signals and children. */
  readonly leaseVersion: number | null;
  /** Words for the table's note column: wake time, child status, whether a signal was taken. */
  readonly note: string;
  /** A child's or a signal's id; null for recorded calls. */
  readonly id: string | null;
}

const STEP_KINDS: Readonly<Record<NonNullable<StepEntry['kind']>, BarKind>> = {
  step: 'step', db: 'db', sleep: 'sleep', signal: 'wait', spawn: 'spawn', patch: 'patch', event: 'event',
};

/** Human words for each kind (the table's first column, the legend). */
export const BAR_LABELS: Readonly<Record<BarKind, string>> = {
  step: 'step', db: 'db step', sleep: 'sleep', wait: 'signal wait', spawn: 'spawn', patch: 'patch', event: 'event', signal: 'signal', child: 'child',
};

/**
 * The bars of a run's timeline, in the order of `getTask`'s timeline, with open ends at `now`
 * (the database's clock). Pure: the page and its table both draw from it.
 */
export function timelineBars(info: Pick<TaskInfo, 'timeline'>, now: Date): TimelineBar[] {
  // where each claim's last record ended: an end-only record starts there
  const lastEnd = new Map<number, Date>();
  return info.timeline.map((e): TimelineBar => {
    if (e.type === 'signal') {
      return {
        kind: 'signal', name: e.name, start: e.at, end: e.consumedAt ?? now, startInferred: false, open: e.consumedAt === null,
        leaseVersion: null, note: e.consumedAt === null ? 'pending: no wait has taken it' : 'taken by a wait', id: e.id,
      };
    }
    if (e.type === 'child') {
      return {
        kind: 'child', name: e.name, start: e.at, end: e.doneAt ?? now, startInferred: false, open: e.doneAt === null,
        leaseVersion: null, note: e.status, id: e.id,
      };
    }
    const kind = e.kind === null ? 'step' : STEP_KINDS[e.kind];
    const opened = kind === 'sleep' || kind === 'wait';
    const end = e.doneAt ?? (opened ? now : e.at);
    const previous = lastEnd.get(e.leaseVersion);
    const start = opened ? e.at : previous !== undefined && previous <= end ? previous : end;
    lastEnd.set(e.leaseVersion, end);
    const due = e.wakeAt === null ? null : formatTime(e.wakeAt);
    return {
      kind, name: e.name, start, end, startInferred: !opened, open: opened && !e.done, leaseVersion: e.leaseVersion,
      note: !opened ? '' : e.done ? `ended${due === null ? '' : ` (due ${due})`}` : due === null ? 'under way, no deadline' : `${kind === 'sleep' ? 'wakes' : 'times out'} at ${due}`,
      id: null,
    };
  });
}
