import type { TaskInfo, TimelineEntry } from '@leasehold/core';
import { renderTable } from './table.js';

type Step = TaskInfo['steps'][number];

/** `2025-03-01 10:00:00` (UTC, to the second), as `dead list` prints times. */
function utc(date: Date): string {
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

/** A JSON value on one line; `—` when there is none (a handler or step that returned nothing). */
function json(value: unknown): string {
  return value === undefined ? '—' : JSON.stringify(value);
}

/** `text` cut to `room` characters, with `…` when cut. */
function cut(text: string, room: number): string {
  return text.length > room ? `${text.slice(0, room - 1)}…` : text;
}

/** What a waiting task waits for and, when it wakes by itself, until when. */
function statusText(task: TaskInfo): string {
  if (task.status === 'pending' && task.availableAt.getTime() > Date.now()) return `pending (due ${utc(task.availableAt)} UTC)`;
  if (task.status !== 'waiting') return task.status;
  const until = task.wakeAt === null ? '' : `, until ${utc(task.wakeAt)} UTC`;
  return `waiting (${task.waitFor ?? 'unknown'}${until})`;
}

function stepState(step: Step): string {
  if (step.done) return 'done';
  return step.wakeAt === null ? 'waiting' : `waiting until ${utc(step.wakeAt)}`;
}

/**
 * A task as `leasehold task show` prints it: its fields, one per line (a multi-line error
 * indented under its label), then its recorded steps and its children as tables, then its
 * timeline (steps, signals and children by time, `getTask`'s `timeline`). Payloads and
 * step results are cut to the terminal's width; the task's result and error are printed whole.
 */
export function renderTask(task: TaskInfo, columns: number): string {
  const fields: [string, string][] = [
    ['status', statusText(task)],
    ['attempts', `${task.attempts}/${task.maxAttempts}`],
    ['parent', task.parentId === null ? '—' : `task:${task.parentId}`],
    ['created', `${utc(task.createdAt)} UTC`],
    ['ended', task.doneAt === null ? '—' : `${utc(task.doneAt)} UTC`],
  ];
  if (task.lastError !== null) fields.push(['last error', task.lastError]);
  if (task.resolution !== null) fields.push(['resolution', task.resolution]);
  const label = 'last error'.length + 2; // the longest label
  fields.push(['payload', cut(json(task.payload), Math.max(40, columns - label))], ['result', json(task.result)]);
  const lines = [`task:${task.id}  ${task.name}`];
  for (const [key, value] of fields) {
    lines.push(`${key.padEnd(label)}${value.split('\n').join(`\n${' '.repeat(label)}`)}`);
  }
  lines.push('', renderSteps(task.steps, columns), '', renderChildren(task.children));
  if (task.timeline.length > 0) lines.push('', renderTimeline(task.timeline));
  return lines.join('\n');
}

function renderSteps(steps: readonly Step[], columns: number): string {
  if (steps.length === 0) return 'no recorded steps';
  const headers = ['STEP', 'STATE', 'RECORDED AT (UTC)'];
  const rows = steps.map((s) => [s.name, stepState(s), utc(s.createdAt)]);
  // the result takes the room the other columns leave, as dead list's last error does
  const used = Math.max(...renderTable(headers, rows).split('\n').map((l) => l.length)) + 2;
  const room = Math.max(40, columns - used);
  return renderTable([...headers, 'RESULT'], rows.map((r, i) => [...r, cut(json(steps[i]!.result), room)]));
}

function renderChildren(children: TaskInfo['children']): string {
  if (children.length === 0) return 'no children';
  return renderTable(['CHILD', 'NAME', 'STATUS'], children.map((c) => [`task:${c.id}`, c.name, c.status]));
}

/** `2025-03-01 10:00:00.250`: a timeline's times, to the millisecond. */
function utcMs(date: Date): string {
  return date.toISOString().slice(0, 23).replace('T', ' ');
}

function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 60_000 ? 1 : 0)} s`;
}

/**
 * One line per event: when, what, which, and what is known of it. A step recorded once when it
 * ended (step, db, spawn, patch) shows when it ended; a sleep or a signal wait when it began, its
 * wake time or deadline, and how long it lasted. `claim` is the lease version that recorded it.
 */
function renderTimeline(timeline: readonly TimelineEntry[]): string {
  const rows = timeline.map((e) => {
    if (e.type === 'signal') {
      return [utcMs(e.at), 'signal', e.name, e.consumedAt === null ? 'sent, pending' : `sent, taken ${utcMs(e.consumedAt)}`];
    }
    if (e.type === 'child') {
      return [utcMs(e.at), 'child', `task:${e.id}`, `${e.name}, ${e.status}${e.doneAt === null ? '' : ` ${utcMs(e.doneAt)}`}`];
    }
    const parts: string[] = [];
    if (e.position !== null) parts.push(`#${e.position}`);
    parts.push(`claim ${e.leaseVersion}`);
    if (e.wakeAt !== null) parts.push(`${e.kind === 'sleep' ? 'until' : 'deadline'} ${utcMs(e.wakeAt)}`);
    if (!e.done) parts.push('under way');
    else if (e.durationMs !== null) parts.push(`took ${seconds(e.durationMs)}`);
    return [utcMs(e.at), e.kind ?? 'step', e.name, parts.join(', ')];
  });
  return renderTable(['TIME (UTC)', 'EVENT', 'NAME', 'DETAIL'], rows);
}
