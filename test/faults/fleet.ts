// A fleet of real worker processes (worker-process.ts) that a scenario can kill, freeze and
// replace, collecting what each one printed and how each one ended.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./worker-process.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** One JSON line a worker process printed. */
export interface WorkerEvent {
  readonly pid: number;
  readonly e: 'ready' | 'started' | 'stopped' | 'ok' | 'lost' | 'retry' | 'dead' | 'error' | 'heartbeat-failed' | 'pool-error' | 'log';
  readonly level?: 'warn' | 'error';
  readonly id?: string;
  readonly v?: number;
  readonly via?: 'finalize' | 'heartbeat';
  readonly message?: string;
}

/** How a worker process ended. */
export interface WorkerExit {
  readonly pid: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
  /** The scenario killed it on purpose. */
  readonly killed: boolean;
}

interface Member {
  readonly child: ChildProcess;
  readonly pid: number;
  /** A warm spare waiting for `activate`. */
  standby: boolean;
  killed: boolean;
  stderr: string;
  readonly exited: Promise<void>;
  readonly started: Promise<void>;
}

/** Worker processes on one database, with the options of worker-process.ts. */
export class Fleet {
  readonly events: WorkerEvent[] = [];
  readonly exits: WorkerExit[] = [];
  readonly #members = new Map<number, Member>();
  readonly #url: string;
  readonly #args: readonly string[];

  constructor(url: string, args: readonly string[]) {
    this.#url = url;
    this.#args = args;
  }

  /** Pids of workers that are claiming. */
  get live(): number[] {
    return [...this.#members.values()].filter((m) => !m.standby).map((m) => m.pid);
  }

  /** Pids of warm spares, loaded and waiting for {@link activate}. */
  get spares(): number[] {
    return [...this.#members.values()].filter((m) => m.standby).map((m) => m.pid);
  }

  /**
   * Starts one more worker process. Resolves once it is claiming, or with `standby` once it is
   * loaded and waiting for {@link activate} (a process boot takes seconds on a busy machine).
   */
  async spawn({ standby = false }: { standby?: boolean } = {}): Promise<number> {
    const args = ['--conditions=@leasehold/source', '--import', 'tsx', SCRIPT, this.#url, ...this.#args, ...(standby ? ['--standby'] : [])];
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    const pid = child.pid;
    if (pid === undefined) throw new Error('worker process did not start');
    let ready!: () => void;
    let started!: () => void;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const event = JSON.parse(line) as WorkerEvent;
      this.events.push(event);
      if (event.e === 'ready') ready();
      if (event.e === 'started') {
        ready();
        started();
      }
    });
    const member: Member = {
      child,
      pid,
      standby,
      killed: false,
      stderr: '',
      started: new Promise<void>((resolve) => (started = resolve)),
      exited: once(child, 'close').then(([code, signal]) => {
        this.#members.delete(pid);
        this.exits.push({ pid, code: code as number | null, signal: signal as NodeJS.Signals | null, stderr: member.stderr, killed: member.killed });
        // a worker that died while starting must not hang the scenario
        ready();
        started();
      }),
    };
    child.stderr!.on('data', (chunk: Buffer) => (member.stderr += chunk.toString()));
    this.#members.set(pid, member);
    await isReady;
    return pid;
  }

  /** Lets a warm spare start claiming; resolves once it is. */
  async activate(pid: number): Promise<void> {
    const member = this.#members.get(pid);
    if (!member?.standby) throw new Error(`no spare ${pid}`);
    member.standby = false;
    member.child.stdin!.write('start\n');
    await member.started;
  }

  /** SIGKILLs a worker (as a crash or an OOM kill would) and waits until it is gone. */
  async kill(pid: number): Promise<void> {
    const member = this.#members.get(pid);
    if (!member) return;
    member.killed = true;
    member.child.kill('SIGKILL');
    await member.exited;
  }

  /** Freezes a worker for `ms` (a VM pause, a stop-the-world GC), then lets it run on. */
  async freeze(pid: number, ms: number): Promise<void> {
    const member = this.#members.get(pid);
    if (!member) return;
    member.child.kill('SIGSTOP');
    await new Promise((r) => setTimeout(r, ms));
    member.child.kill('SIGCONT');
  }

  /** Stops every live worker gracefully (SIGTERM) and waits for all of them to exit. */
  async stopAll(): Promise<void> {
    const members = [...this.#members.values()];
    for (const m of members) m.child.kill('SIGTERM');
    await Promise.all(members.map((m) => m.exited));
  }

  /** Kills whatever is still running (cleanup after a failed scenario). */
  async destroy(): Promise<void> {
    await Promise.all(this.live.map((pid) => this.kill(pid)));
  }

  /** Workers that ended on their own terms badly: non-zero exit, or anything on stderr. */
  crashes(): WorkerExit[] {
    return this.exits.filter((x) => !x.killed && (x.code !== 0 || x.stderr.trim() !== ''));
  }
}
