import { afterEach, expect } from 'vitest';
import type { LeaseWorker, WorkerEventMap } from '@leasehold/core';

/**
 * Tracks the workers a test file starts; after each test, any still running is stopped and the
 * test fails: a leaked worker would steal the next test's tasks.
 */
export function useWorkers(): <Row>(worker: LeaseWorker<Row>) => LeaseWorker<Row> {
  const workers = new Set<{ w: LeaseWorker<unknown>; stopped: boolean }>();
  afterEach(async () => {
    const leaked = [...workers].filter((entry) => !entry.stopped);
    workers.clear();
    await Promise.all(leaked.map((entry) => entry.w.stop({ timeout: 0 })));
    expect(leaked.map((entry) => entry.w.owner), 'workers left running after the test').toEqual([]);
  });
  return (worker) => {
    const entry = { w: worker as unknown as LeaseWorker<unknown>, stopped: false };
    worker.once('worker:stopped', () => (entry.stopped = true));
    workers.add(entry);
    return worker;
  };
}

/** Resolves with the first payload of `event` that satisfies `test`, or rejects after `ms`. */
export function nextEvent<Row, K extends keyof WorkerEventMap<Row>>(
  worker: LeaseWorker<Row>,
  event: K,
  test: (payload: WorkerEventMap<Row>[K][0]) => boolean = () => true,
  ms = 15_000,
): Promise<WorkerEventMap<Row>[K][0]> {
  type P = WorkerEventMap<Row>[K][0];
  const emitter = worker as unknown as {
    on(e: K, fn: (p: P) => void): unknown;
    off(e: K, fn: (p: P) => void): unknown;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off(event, on);
      reject(new Error(`no ${String(event)} within ${ms} ms`));
    }, ms);
    const on = (payload: P) => {
      if (!test(payload)) return;
      clearTimeout(timer);
      emitter.off(event, on);
      resolve(payload);
    };
    emitter.on(event, on);
  });
}

/** A gate a test opens by hand: a handler or publisher awaits it to stay "in flight". */
export function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}
