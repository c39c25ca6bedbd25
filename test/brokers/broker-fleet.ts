// Dispatcher processes (dispatcher-process.ts) that a broker test starts, SIGKILLs and stops,
// with every JSON line they printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { DispatcherProcessOptions } from './dispatcher-process.js';

const SCRIPT = fileURLToPath(new URL('./dispatcher-process.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** One line a dispatcher process printed. */
export interface DispatcherEvent {
  readonly pid: number;
  readonly e: 'started' | 'dup' | 'retry' | 'dead' | 'lost' | 'error' | 'stopped';
  readonly id?: string;
  readonly message?: string;
  readonly published?: number;
  readonly duplicates?: number;
}

interface Member {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  stderr: string;
  killed: boolean;
}

export class BrokerFleet {
  readonly events: DispatcherEvent[] = [];
  readonly #members = new Map<number, Member>();
  readonly #url: string;

  constructor(url: string) {
    this.#url = url;
  }

  /** Starts a dispatcher process; resolves with its pid once it is dispatching. */
  async spawn(options: DispatcherProcessOptions): Promise<number> {
    const child = spawn(process.execPath, ['--conditions=@leasehold/source', '--import', 'tsx', SCRIPT, this.#url, JSON.stringify(options)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pid = child.pid!;
    const member: Member = { child, stderr: '', killed: false, exited: once(child, 'close').then(() => undefined) };
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (member.stderr += chunk));
    let started!: () => void;
    const isStarted = new Promise<void>((resolve) => (started = resolve));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as DispatcherEvent;
      this.events.push(event);
      if (event.e === 'started') started();
    });
    void member.exited.then(started);
    this.#members.set(pid, member);
    await isStarted;
    if (child.exitCode !== null) throw new Error(`dispatcher process exited at start: ${member.stderr}`);
    return pid;
  }

  /** SIGKILLs a dispatcher (a crash) and waits until it is gone. */
  async kill(pid: number): Promise<void> {
    const member = this.#members.get(pid);
    if (!member) return;
    member.killed = true;
    member.child.kill('SIGKILL');
    await member.exited;
  }

  /** SIGTERMs every live dispatcher and waits for each to exit. */
  async stopAll(): Promise<void> {
    const live = [...this.#members.values()].filter((m) => !m.killed);
    for (const m of live) m.child.kill('SIGTERM');
    await Promise.all(live.map((m) => m.exited));
  }

  async destroy(): Promise<void> {
    await Promise.all([...this.#members.keys()].map((pid) => this.kill(pid)));
  }

  count(e: DispatcherEvent['e']): number {
    return this.events.filter((x) => x.e === e).length;
  }

  /** Processes that wrote to stderr or exited non-zero without being killed. */
  crashes(): string[] {
    return [...this.#members.entries()]
      .filter(([, m]) => !m.killed && (m.stderr.trim() !== '' || (m.child.exitCode !== null && m.child.exitCode !== 0)))
      .map(([pid, m]) => `${pid}: exit ${m.child.exitCode}: ${m.stderr.slice(0, 2_000)}`);
  }
}
