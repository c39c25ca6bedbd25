// A TCP proxy in front of PostgreSQL that can play a frozen server: once frozen, it accepts
// connections and bytes but forwards nothing either way, so every statement, every new connection
// and every goodbye waits for an answer that never comes (as with a SIGSTOPped server). A client
// that gives up and closes its socket is seen closing here.
import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';

/** A running proxy; see the file comment. */
export interface FreezableProxy {
  /** `url` with host and port replaced by the proxy's. */
  readonly url: string;
  readonly port: number;
  /** Stops forwarding on every connection, open or new. */
  freeze(): void;
  /** New connections from now on hang; open ones keep working. */
  freezeNew(): void;
  /** Client connections open now (frozen ones included). */
  readonly openConnections: number;
  /** Resolves with the next client connection that arrives while new connections hang. */
  nextHeld(): Promise<Socket>;
  /** Closes every connection and the listening socket. */
  close(): Promise<void>;
}

interface Link {
  readonly client: Socket;
  readonly upstream: Socket | undefined;
}

/** Starts a proxy on 127.0.0.1 (on `port`, else a free one) in front of the server `url` points at. */
export async function startFreezableProxy(url: string, port = 0): Promise<FreezableProxy> {
  const target = new URL(url);
  const links = new Set<Link>();
  let mode: 'forward' | 'hold-new' | 'frozen' = 'forward';
  const heldWaiters: ((socket: Socket) => void)[] = [];

  const server = createServer((client) => {
    client.on('error', () => undefined);
    if (mode !== 'forward') {
      // accepted, and never answered
      const link: Link = { client, upstream: undefined };
      links.add(link);
      client.once('close', () => links.delete(link));
      client.pause();
      heldWaiters.shift()?.(client);
      return;
    }
    const upstream = connect(Number(target.port || 5432), target.hostname);
    upstream.on('error', () => undefined);
    const link: Link = { client, upstream };
    links.add(link);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.once('close', drop);
    upstream.once('close', drop);
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('proxy has no address');
  const proxied = new URL(url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(address.port);

  return {
    url: proxied.toString(),
    port: address.port,
    freeze() {
      mode = 'frozen';
      for (const { client, upstream } of links) {
        if (!upstream) continue;
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    freezeNew() {
      mode = 'hold-new';
    },
    get openConnections() {
      return links.size;
    },
    nextHeld() {
      return new Promise((resolve) => heldWaiters.push(resolve));
    },
    async close() {
      for (const { client, upstream } of links) {
        client.destroy();
        upstream?.destroy();
      }
      links.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
