// A TCP proxy the test controls, between a publisher and the machine's shared RabbitMQ: cutting
// it is a broker outage for that publisher alone (the shared server keeps running for others).
import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #port = 0;
  /** Connections accepted so far. */
  connections = 0;

  constructor(targetHost: string, targetPort: number) {
    this.#target = { host: targetHost, port: targetPort };
  }

  get port(): number {
    return this.#port;
  }

  /** Starts listening (on the port it had before, after a `cut`). */
  async open(): Promise<void> {
    const server = createServer((client) => this.#pipe(client));
    server.listen(this.#port, '127.0.0.1');
    await once(server, 'listening');
    this.#port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  /** The outage: stops listening (new connections are refused) and resets every open one. */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #pipe(client: Socket): void {
    this.connections++;
    const upstream = createConnection(this.#target);
    for (const s of [client, upstream]) {
      this.#sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        this.#sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
