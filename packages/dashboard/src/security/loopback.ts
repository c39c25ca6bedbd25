import { isIP } from 'node:net';

/** Whether a host name or address to bind to reaches this machine only. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost') return true;
  return isLoopbackAddress(h);
}

/** Whether a peer address (`socket.remoteAddress`) is a loopback one: 127.0.0.0/8, ::1, or ::ffff:127.x. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const a = address.toLowerCase();
  if (a === '::1') return true;
  const v4 = a.startsWith('::ffff:') ? a.slice(7) : a;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

// headers a proxy adds: a request that carries one came from elsewhere, whatever its socket says
const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-real-ip'] as const;

/**
 * Why a dashboard without `auth` or `token` refuses a request, or null when it may answer: the
 * peer must be on this machine, the request must not have come through a proxy (a reverse proxy
 * on the same host makes every visitor look local), and its Host must be a loopback name or
 * address — otherwise a web page elsewhere could rebind its own name to 127.0.0.1 and read the
 * dashboard from the victim's browser as same-origin (DNS rebinding).
 */
export function loopbackRefusal(remoteAddress: string | undefined, headers: Headers): string | null {
  if (!isLoopbackAddress(remoteAddress)) return 'it answers loopback clients only';
  const proxied = PROXY_HEADERS.find((name) => headers.has(name));
  if (proxied !== undefined) return `it does not answer requests that came through a proxy (${proxied})`;
  const host = headers.get('host') ?? '';
  // the name without its port: `[::1]:4100` → `::1`, `localhost:4100` → `localhost`
  const name = (host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d*$/, '')).toLowerCase();
  // browsers resolve *.localhost to the loopback interface themselves, never through DNS
  if (!isLoopbackHost(name) && !name.endsWith('.localhost')) return `it answers requests for localhost or a loopback address only, not for ${JSON.stringify(host)}`;
  return null;
}
