// Parent side of a bench child process: every measured worker or producer runs in a fresh Node.js
// process (as in production, and as in the peer harness), talking to the runner over IPC.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A message from a child: `type` plus any fields. */
export type ChildMessage = { readonly type: string } & Record<string, unknown>;

const CHILD_MAIN = fileURLToPath(new URL('./child-main.ts', import.meta.url));
// children import @leasehold/* from source, like the tests, so no build is needed
const EXEC_ARGV = [
  '--conditions=@leasehold/source',
  '--import',
  import.meta.resolve('tsx'),
  // profiling: BENCH_CPU_PROF=<dir> writes a .cpuprofile per child (open it in Chrome DevTools)
  ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
];
const live = new Set<ChildProcess>();

/** Kills every child still running (the runner calls it on exit and on SIGINT). */
export function killAllChildren(): void {
  for (const p of live) p.kill('SIGKILL');
}

export class Child {
  readonly role: string;
  readonly #proc: ChildProcess;
  readonly #buffer: ChildMessage[] = [];
  readonly #waiters: { type: string; resolve: (m: ChildMessage) => void; reject: (e: Error) => void }[] = [];
  readonly #listeners = new Map<string, (m: ChildMessage) => void>();
  readonly exited: Promise<number | string>;
  #exit: number | string | undefined;
  #error: Error | undefined;

  /** Forks `script` (bench/lib/child-main.ts unless given) with `role` and `options` as its arguments. */
  constructor(role: string, options: object = {}, script: string = CHILD_MAIN) {
    this.role = role;
    this.#proc = fork(script, [role, JSON.stringify(options)], {
      execArgv: EXEC_ARGV,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    live.add(this.#proc);
    this.exited = new Promise((resolve) => {
      this.#proc.on('exit', (code, signal) => {
        live.delete(this.#proc);
        this.#exit = code ?? signal ?? 'unknown';
        const err = new Error(`${role} child exited (${this.#exit})`);
        for (const w of this.#waiters.splice(0)) w.reject(this.#error ?? err);
        resolve(this.#exit);
      });
    });
    this.#proc.on('message', (raw) => this.#onMessage(raw as ChildMessage));
  }

  #onMessage(m: ChildMessage): void {
    if (m.type === 'error') {
      this.#error = new Error(`${this.role} child failed: ${String(m.message)}`);
      for (const w of this.#waiters.splice(0)) w.reject(this.#error);
      return;
    }
    const listener = this.#listeners.get(m.type);
    if (listener) return listener(m);
    const i = this.#waiters.findIndex((w) => w.type === m.type);
    if (i >= 0) this.#waiters.splice(i, 1)[0]!.resolve(m);
    else this.#buffer.push(m);
  }

  /** Why the child cannot answer any more: it reported an error, or it exited. */
  get failure(): Error | undefined {
    return this.#error ?? (this.#exit === undefined ? undefined : new Error(`${this.role} child exited (${this.#exit})`));
  }

  /** Routes every message of `type` to `fn` instead of the queue {@link next} reads. */
  on(type: string, fn: (m: ChildMessage) => void): this {
    this.#listeners.set(type, fn);
    return this;
  }

  send(message: ChildMessage): void {
    this.#proc.send(message);
  }

  /** The next message of `type`; rejects when the child fails, exits or takes too long. */
  next(type: string, timeoutMs = 120_000): Promise<ChildMessage> {
    if (this.#error) return Promise.reject(this.#error);
    const i = this.#buffer.findIndex((m) => m.type === type);
    if (i >= 0) return Promise.resolve(this.#buffer.splice(i, 1)[0]!);
    if (this.#exit !== undefined) return Promise.reject(new Error(`${this.role} child already exited (${this.#exit})`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timeout waiting for "${type}" from ${this.role}`)), timeoutMs);
      this.#waiters.push({
        type,
        resolve: (m) => (clearTimeout(timer), resolve(m)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
    });
  }

  /** Asks the child to stop gracefully; kills it after `timeoutMs`. */
  async stop(timeoutMs = 20_000): Promise<void> {
    if (this.#exit !== undefined) return;
    try {
      this.#proc.send({ type: 'stop' });
    } catch {
      // the IPC channel is already closed: the child is on its way out
    }
    const timer = setTimeout(() => this.#proc.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Runs a child that sends one `result` message and exits; returns that message. */
export async function runChild(role: string, options: Record<string, unknown>, timeoutMs?: number): Promise<ChildMessage> {
  const child = new Child(role, options);
  try {
    return await child.next('result', timeoutMs);
  } finally {
    await child.stop();
  }
}

/**
 * Runs a producer child through its timed section (see `timed` in child-main.ts) and returns
 * its 'result' plus the CPU its PostgreSQL backends used meanwhile.
 */
export async function runTimedChild(
  role: string,
  options: Record<string, unknown>,
  sampleServerCpu: () => Promise<Map<number, number>>,
): Promise<{ result: ChildMessage; serverCpuMs: number; measured: boolean }> {
  const child = new Child(role, options);
  try {
    await child.next('ready');
    const before = await sampleServerCpu();
    child.send({ type: 'go' });
    const result = await child.next('result');
    const after = await sampleServerCpu();
    let serverCpuMs = 0;
    for (const [pid, end] of after) serverCpuMs += end - (before.get(pid) ?? 0);
    return { result, serverCpuMs, measured: after.size > 0 };
  } finally {
    await child.stop();
  }
}
