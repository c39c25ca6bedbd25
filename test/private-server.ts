// For tests that start private servers of their own (PgBouncer, a PostgreSQL primary and standby):
// a port to give them, and the OS user to run them as when the tests run as root.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The uid and gid of OS user `name`, or undefined when there is no such user. */
export function userIds(name: string): { uid: number; gid: number } | undefined {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Ports {@link freePort} handed out in this process: never the same one twice. */
const handedOut = new Set<number>();

/**
 * The first port of the kernel's ephemeral range: the local ports it gives outgoing connections
 * and `listen(0)` (32768 unless configured otherwise).
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether a server can listen on `port` of 127.0.0.1 now. */
async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (listening) await new Promise((resolve) => server.close(resolve));
  return listening;
}

/**
 * A TCP port on 127.0.0.1 that nothing listens on now, for a private server to listen on. Picked
 * below the kernel's ephemeral range: a port the OS hands out (`listen(0)`) is one it may give the
 * next outgoing connection too, and with the suites' many connections one did take a JetStream
 * node's monitoring port between its choice and the node's start (CI, "address already in use").
 * Below the range no connection takes it, nor while a server killed by a test is down before its
 * restart.
 */
export async function freePort(): Promise<number> {
  const floor = 10_000;
  const low = ephemeralLow();
  if (low - floor < 1_000) throw new Error(`the ephemeral port range starts at ${low}: no room below it for private servers`);
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = floor + Math.floor(Math.random() * (low - floor));
    if (handedOut.has(port)) continue;
    // taken before the check, so that calls made together never pick the same one
    handedOut.add(port);
    if (await canListen(port)) return port;
    handedOut.delete(port);
  }
  throw new Error('no free port below the ephemeral range');
}
