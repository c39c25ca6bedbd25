import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { createPool } from '../shared/pool.js';
import { createDispatcher, type Dispatcher } from '@leasehold/outbox';
import { dispatcherOptions } from './dispatcher-options.js';
import { demoPublisher } from './publisher.js';

/** What happened to the worker that was killed. */
export interface Kill {
  readonly worker: string;
  /** The event the receiver had applied when the worker was killed, before it was recorded. */
  readonly eventId: string;
  /** When it was killed (epoch ms). */
  readonly at: number;
}

/** The four dispatcher workers. */
export interface Workers {
  /** Set once the child-process worker has been SIGKILLed. */
  readonly kill: Kill | undefined;
  /** Stops the in-process workers gracefully and makes sure the child is gone. */
  stop(): Promise<void>;
}

/**
 * Starts the child-process worker first (it must be running before events exist, to get its
 * share), then three dispatchers in this process, each with a pool of its own. The child asks
 * to be killed at its chosen moment, and is, with SIGKILL: no cleanup, no finally, like a
 * machine losing power.
 */
export async function startWorkers(options: {
  databaseUrl: string;
  receiverUrl: string;
  secret: string;
  local: readonly string[];
  doomed: string;
  killAfter: number;
}): Promise<Workers> {
  let kill: Kill | undefined;
  const child = await forkDoomedWorker(options, (eventId) => {
    child.kill('SIGKILL');
    kill = { worker: options.doomed, eventId, at: Date.now() };
  });
  const pools: pg.Pool[] = [];
  const dispatchers: Dispatcher[] = [];
  try {
    for (const owner of options.local) {
      const pool = createPool(options.databaseUrl, 3);
      pools.push(pool);
      const dispatcher = createDispatcher(dispatcherOptions(pool, demoPublisher(options.receiverUrl, options.secret, owner), owner));
      dispatchers.push(dispatcher);
      await dispatcher.start();
    }
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    get kill() {
      return kill;
    },
    async stop() {
      child.kill('SIGKILL');
      await Promise.all(dispatchers.map((d) => d.stop({ timeout: '5s' }).catch(() => undefined)));
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    },
  };
}

type ChildMessage = { type: 'ready' } | { type: 'kill-me'; eventId: string };

async function forkDoomedWorker(
  options: { databaseUrl: string; receiverUrl: string; secret: string; doomed: string; killAfter: number },
  onKillMe: (eventId: string) => void,
): Promise<ChildProcess> {
  const script = fileURLToPath(new URL('./doomed-worker.ts', import.meta.url));
  // fork keeps this process's loader flags (tsx, the source condition) and adds an IPC channel
  const child = fork(script, [options.databaseUrl, options.receiverUrl, options.secret, options.doomed, String(options.killAfter)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  child.on('message', (message: ChildMessage) => {
    if (message.type === 'kill-me') onKillMe(message.eventId);
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker ${options.doomed} did not start within 60 s`)), 60_000);
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`worker ${options.doomed} exited before it was ready (${signal ?? code})`));
    });
  });
  return child;
}
