import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

/** One request as the test server received it. */
export interface ReceivedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  /** The raw body, as sent. */
  readonly body: string;
}

/** Answers a request; may leave it hanging or destroy the socket. */
export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => unknown;

/** A real HTTP server on 127.0.0.1 whose behaviour each test sets. */
export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** Every request received so far (reset with `reset()`). */
  readonly requests: ReceivedRequest[];
  /** Replaces the handler and forgets the recorded requests. */
  reset(handler: Handler): void;
}

/** Starts a `node:http` server for this test file; every connection is destroyed afterwards. */
export function useTestServer(): TestServer {
  let server: Server | undefined;
  let origin = '';
  let handler: Handler = (_req, res) => res.writeHead(500).end('no handler');
  const requests: ReceivedRequest[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        Promise.resolve(handler(req, res, body)).catch((error: unknown) => {
          res.destroy(error instanceof Error ? error : new Error(String(error)));
        });
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    // hung requests keep their sockets open: close them, or close() would wait forever
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  return {
    get origin() {
      return origin;
    },
    requests,
    reset(next) {
      handler = next;
      requests.length = 0;
    },
  };
}
