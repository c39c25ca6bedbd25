// A TCP proxy in front of PostgreSQL whose target the test moves: `switchTo(port)` resets every
// open connection (as a failover does: the old primary's sessions are gone) and sends new ones to
// the new target, the way a virtual IP, a DNS name or a cloud's endpoint moves to a promoted
// standby. `freeze()` stops forwarding on the open connections without closing them: on the
// replication link, it holds back the WAL a standby would receive, so an asynchronous standby
// falls behind by exactly what the primary commits meanwhile.
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';

interface Link {
  readonly client: Socket;
  readonly upstream: Socket;
}

export class SwitchProxy {
  #targetPort: number;
  readonly #links = new Set<Link>();
  #server: Server | undefined;
  #port = 0;
  #frozen = false;
  /** Connections accepted so far. */
  connections = 0;

  constructor(targetPort: number) {
    this.#targetPort = targetPort;
  }

  /** The port it listens on (127.0.0.1). */
  get port(): number {
    return this.#port;
  }

  /** The port new connections go to. */
  get target(): number {
    return this.#targetPort;
  }

  /** Connections open now. */
  get open(): number {
    return this.#links.size;
  }

  async listen(): Promise<void> {
    const server = createServer((client) => this.#pipe(client));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    this.#port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  /** Resets every open connection and sends new connections to `port`. */
  switchTo(port: number): void {
    this.#targetPort = port;
    this.#frozen = false;
    this.#resetAll();
  }

  /** Stops forwarding bytes on the open connections (they stay open; new ones are refused). */
  freeze(): void {
    this.#frozen = true;
    for (const { client, upstream } of this.#links) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** Resets every connection and stops listening. */
  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.#resetAll();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #resetAll(): void {
    for (const { client, upstream } of this.#links) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    this.#links.clear();
  }

  #pipe(client: Socket): void {
    this.connections++;
    client.on('error', () => undefined);
    if (this.#frozen) return void client.resetAndDestroy();
    // the target as it is now: a connection opened before a switch stays on the old one (and
    // was reset by the switch)
    const upstream = connect(this.#targetPort, '127.0.0.1');
    upstream.on('error', () => undefined);
    const link: Link = { client, upstream };
    this.#links.add(link);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      this.#links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.once('close', drop);
    upstream.once('close', drop);
  }
}
