// Private nats-server processes for the broker tests: one node, or a 3-node JetStream cluster on
// loopback ports, each with a store folder of its own; killed, stopped and restarted at will.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../private-server.js';

/** One private nats-server with JetStream. */
export class NatsNode {
  readonly name: string;
  readonly port: number;
  readonly monitorPort: number;
  readonly storeDir: string;
  readonly #args: string[];
  #process: ChildProcess | undefined;
  #log = '';

  constructor(name: string, port: number, monitorPort: number, storeDir: string, extra: string[] = []) {
    this.name = name;
    this.port = port;
    this.monitorPort = monitorPort;
    this.storeDir = storeDir;
    this.#args = ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-js', '-sd', storeDir, '--server_name', name, ...extra];
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.#process !== undefined && this.#process.exitCode === null && this.#process.signalCode === null;
  }

  /** Starts the process (same store folder as before, so streams survive a restart). */
  start(): void {
    if (this.running) return;
    const child = spawn('nats-server', this.#args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.#log = (this.#log + chunk).slice(-20_000)));
    this.#process = child;
  }

  /** Resolves once the node answers `/healthz` with 200 (JetStream ready), or throws after `ms`. */
  async ready(ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${this.monitorPort}/healthz`, { signal: AbortSignal.timeout(1_000) });
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      if (!this.running) throw new Error(`nats-server ${this.name} exited: ${this.#log.slice(-2_000)}`);
      if (Date.now() > deadline) throw new Error(`nats-server ${this.name} not healthy within ${ms} ms: ${this.#log.slice(-2_000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Ends the process with `signal` (SIGKILL: a crash; SIGTERM: a clean stop) and waits for it. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.#process;
    if (!child || !this.running) return;
    const exited = once(child, 'exit');
    child.kill(signal);
    await exited;
  }

  get log(): string {
    return this.#log;
  }

  /**
   * This node's view of `stream`, read from its monitoring port (`/jsz`), which answers even
   * while the stream has no leader: the leader it knows (its own name once it won an
   * election) and the messages its replica holds. Undefined when it holds no replica.
   */
  async streamView(stream: string): Promise<{ leader: string; messages: number } | undefined> {
    const res = await fetch(`http://127.0.0.1:${this.monitorPort}/jsz?streams=true`, { signal: AbortSignal.timeout(1_000) });
    const body = (await res.json()) as JszAnswer;
    const found = body.account_details?.flatMap((a) => a.stream_detail ?? []).find((s) => s.name === stream);
    return found && { leader: found.cluster?.leader ?? '', messages: found.state?.messages ?? 0 };
  }
}

/** The part of nats-server's `/jsz?streams=true` answer that {@link NatsNode.streamView} reads. */
interface JszAnswer {
  readonly account_details?: ReadonlyArray<{
    readonly stream_detail?: ReadonlyArray<{ readonly name: string; readonly cluster?: { readonly leader?: string }; readonly state?: { readonly messages?: number } }>;
  }>;
}

/** Nodes started together; `destroy()` kills them and removes their folders. */
export class NatsNodes {
  readonly nodes: NatsNode[];
  readonly #root: string;

  private constructor(nodes: NatsNode[], root: string) {
    this.nodes = nodes;
    this.#root = root;
  }

  /** Every node's client URL, for a client's `servers` list. */
  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }

  node(name: string): NatsNode {
    const found = this.nodes.find((n) => n.name === name);
    if (!found) throw new Error(`no node ${name}`);
    return found;
  }

  /** One standalone JetStream server. */
  static async single(): Promise<NatsNodes> {
    const root = mkdtempSync(join(tmpdir(), 'lh-nats-'));
    const node = new NatsNode('solo', await freePort(), await freePort(), join(root, 'solo'));
    const nodes = new NatsNodes([node], root);
    node.start();
    await node.ready();
    return nodes;
  }

  /** A 3-node JetStream cluster (routes between all three), ready when every node is healthy. */
  static async cluster(size = 3): Promise<NatsNodes> {
    const root = mkdtempSync(join(tmpdir(), 'lh-nats-cluster-'));
    const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort(), monitor: await freePort() })));
    const routes = ports.map((p) => `nats://127.0.0.1:${p.route}`).join(',');
    const nodes = ports.map(
      (p, i) =>
        new NatsNode(`n${i + 1}`, p.client, p.monitor, join(root, `n${i + 1}`), [
          '--cluster_name', 'lh-test', '--cluster', `nats://127.0.0.1:${p.route}`, '--routes', routes,
        ]),
    );
    const all = new NatsNodes(nodes, root);
    for (const n of nodes) n.start();
    await Promise.all(nodes.map((n) => n.ready(60_000)));
    return all;
  }

  async destroy(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop('SIGKILL')));
    rmSync(this.#root, { recursive: true, force: true });
  }
}
