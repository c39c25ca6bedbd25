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
