import type { Worker, WorkerLogger } from '@leasehold/core';
import type { Io } from './io.js';

/**
 * The worker's log records as stderr lines: `leasehold: <message>`, and for an error (a dead
 * task, a worker error) the first frames of its stack, which say where in the task module it
 * failed. Retries (debug) are lines too: a person running one worker in a shell wants to see them.
 */
export function stderrLogger(io: Io): WorkerLogger {
  const line = (message: string, fields?: object, stack = false) => {
    const text = `leasehold: ${message.replace(/^\[leasehold\] /, '')}`;
    const err = (fields as { err?: unknown } | undefined)?.err;
    const frames = stack && err instanceof Error ? (err.stack ?? '').split('\n').filter((l) => /^\s+at /.test(l)).slice(0, 5) : [];
    io.err([text, ...frames].join('\n'));
  };
  return {
    error: (message, fields) => line(message, fields, true),
    warn: (message, fields) => line(message, fields),
    info: (message, fields) => line(message, fields),
    debug: (message, fields) => line(message, fields),
  };
}

/** What the worker's tasks came to, counted from its events. */
export interface TaskCounts {
  done: number;
  retried: number;
  dead: number;
  deferred: number;
}

/**
 * Counts the worker's task outcomes, in all and since the last {@link Tally.takeRecent} call: the
 * summary lines say what happened without a line per task (which a busy worker could not afford).
 */
export class Tally {
  readonly total: TaskCounts = { done: 0, retried: 0, dead: 0, deferred: 0 };
  #recent: TaskCounts = { done: 0, retried: 0, dead: 0, deferred: 0 };

  constructor(worker: Worker) {
    worker.on('task:succeeded', () => this.#count('done'));
    worker.on('task:retrying', () => this.#count('retried'));
    worker.on('task:dead', () => this.#count('dead'));
    worker.on('task:deferred', () => this.#count('deferred'));
  }

  /** The counts since the previous call, or undefined when nothing finished meanwhile. */
  takeRecent(): TaskCounts | undefined {
    const recent = this.#recent;
    this.#recent = { done: 0, retried: 0, dead: 0, deferred: 0 };
    return recent.done + recent.retried + recent.dead + recent.deferred === 0 ? undefined : recent;
  }

  #count(key: keyof TaskCounts): void {
    this.total[key]++;
    this.#recent[key]++;
  }
}

/** `12 done, 1 retried, 0 dead` (deferrals only when there were some). */
export function describeCounts(c: TaskCounts): string {
  return `${c.done} done, ${c.retried} retried, ${c.dead} dead${c.deferred > 0 ? `, ${c.deferred} deferred` : ''}`;
}
