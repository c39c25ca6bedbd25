// Parent side of broker-child.ts: forks it with the same flags as every bench child (sources
// through tsx, the @leasehold/source condition) and reads its IPC messages.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildMessage } from '../lib/child.js';
import type { BrokerChildOptions } from './broker-child.js';

const SCRIPT = fileURLToPath(new URL('./broker-child.ts', import.meta.url));

export class BrokerChild {
  readonly #proc: ChildProcess;
  readonly #buffer: ChildMessage[] = [];
  readonly #waiters: Array<{ type: string; resolve: (m: ChildMessage) => void; reject: (e: Error) => void }> = [];
  readonly #exited: Promise<void>;
  #failure: Error | undefined;
  /** The dispatcher's published count, as last reported. */
  handled = 0;
  onCount: () => void = () => {};

  constructor(options: BrokerChildOptions) {
    this.#proc = fork(SCRIPT, [JSON.stringify(options)], {
      execArgv: ['--conditions=@leasehold/source', '--import', import.meta.resolve('tsx')],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#exited = new Promise((resolve) => {
      this.#proc.on('exit', (code, signal) => {
        this.#fail(new Error(`broker child exited (${code ?? signal})`));
        resolve();
      });
    });
    this.#proc.on('message', (raw) => this.#onMessage(raw as ChildMessage));
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    for (const w of this.#waiters.splice(0)) w.reject(this.#failure);
  }

  #onMessage(m: ChildMessage): void {
    if (m.type === 'error') return this.#fail(new Error(`broker child failed: ${String(m.message)}`));
    if (m.type === 'count') {
      this.handled = Number(m.n);
      return this.onCount();
    }
    const i = this.#waiters.findIndex((w) => w.type === m.type);
    if (i >= 0) this.#waiters.splice(i, 1)[0]!.resolve(m);
    else this.#buffer.push(m);
  }

  send(message: ChildMessage): void {
    this.#proc.send(message);
  }

  /** The next message of `type`; rejects when the child fails or exits first, or after `timeoutMs`. */
  next(type: string, timeoutMs = 60_000): Promise<ChildMessage> {
    const i = this.#buffer.findIndex((m) => m.type === type);
    if (i >= 0) return Promise.resolve(this.#buffer.splice(i, 1)[0]!);
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timeout waiting for "${type}" from the broker child`)), timeoutMs);
      this.#waiters.push({
        type,
        resolve: (m) => (clearTimeout(timer), resolve(m)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
    });
  }

  /** Asks the child to stop; SIGKILLs it after `timeoutMs`. */
  async stop(timeoutMs = 20_000): Promise<void> {
    if (this.#proc.exitCode !== null || this.#proc.signalCode !== null) return;
    try {
      this.#proc.send({ type: 'stop' });
    } catch {
      // the IPC channel is already closed: the child is on its way out
    }
    const timer = setTimeout(() => this.#proc.kill('SIGKILL'), timeoutMs);
    await this.#exited;
    clearTimeout(timer);
  }
}
