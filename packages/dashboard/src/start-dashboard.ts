import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '@leasehold/core';
import { checkOptionKeys, optionKeys, parseInteger } from '@leasehold/core/internal';
import { mountDashboard } from './mount-dashboard.js';
import { DASHBOARD_KEYS, type DashboardOptions } from './options.js';
import { isLoopbackHost } from './security/loopback.js';

/** Options of {@link startDashboard}: the dashboard's, plus where to listen. */
export interface StartDashboardOptions extends DashboardOptions {
  /**
   * Address to bind. Anything but a loopback address needs `auth` or `token`.
   * @defaultValue '127.0.0.1'
   */
  readonly host?: string;
  /** Port; 0 picks a free one. @defaultValue 4100 */
  readonly port?: number;
}

/** A dashboard listening on its own HTTP server. */
export interface RunningDashboard {
  /** e.g. `http://127.0.0.1:4100/` */
  readonly url: string;
  readonly server: Server;
  /** Stops listening and closes open connections. Idempotent. */
  close(): Promise<void>;
}

const START_OPTIONS = optionKeys<StartDashboardOptions>()('startDashboard', [...DASHBOARD_KEYS, 'host', 'port']);

/**
 * Starts the dashboard on its own HTTP server, on 127.0.0.1 unless told otherwise. Refuses, with
 * a `ConfigError`, to listen on any other address without `auth` or `token`: the dashboard can
 * retry and skip dead work, and shows payloads.
 *
 * @example
 * const dashboard = await startDashboard({ database: pool, port: 4100 });
 * console.log(`dashboard on ${dashboard.url}`);
 */
export async function startDashboard(options: StartDashboardOptions): Promise<RunningDashboard> {
  checkOptionKeys(options, START_OPTIONS);
  const host = options.host ?? '127.0.0.1';
  if (typeof host !== 'string' || host === '') throw new ConfigError('host', 'Expected `host` to be an address such as 127.0.0.1');
  const port = parseInteger(options.port ?? 4100, 'port', 0, 65_535);
  if (!isLoopbackHost(host) && options.auth === undefined && options.token === undefined) {
    throw new ConfigError('host', `Refusing to listen on ${host} without \`auth\` or \`token\`: anyone who can reach it could read payloads and retry or skip dead work. Bind 127.0.0.1, or give an auth hook or a token`);
  }
  const { host: _host, port: _port, ...mounted } = options;
  const server = createServer(mountDashboard(mounted));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => (server.off('error', reject), resolve()));
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shown}:${address.port}${(options.basePath ?? '/').replace(/\/?$/, '/')}`,
    server,
    close: () => (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    })),
  };
}
