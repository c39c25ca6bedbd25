// stop() while the database server is frozen (SIGSTOP, issue #11 item 5), in a real process:
// a throwaway PostgreSQL of this file's own is stopped with SIGSTOP while a worker process runs
// two tasks; the worker is told to stop with a 500 ms timeout. It must return within 1.5 s,
// report the two tasks it abandoned (event and log line), hold no pool connection, and the
// process must then exit on its own while the server is still frozen.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue, defineTask, migrate } from '@leasehold/core';
import { startEmbeddedPostgres, type ThrowawayPostgres } from '@leasehold/core/testing';

let server: ThrowawayPostgres;
let pool: pg.Pool;

beforeAll(async () => {
  server = await startEmbeddedPostgres({ postgresFlags: ['-c', 'fsync=off'] });
  pool = new pg.Pool({ connectionString: server.connectionString, max: 2 });
  pool.on('error', () => undefined);
  await migrate(pool);
});

afterAll(async () => {
  await pool?.end();
  await server?.stop();
});

/** The server's processes: the postmaster (started with `-p <port>`) and its children. */
function serverPids(): number[] {
  const pids = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  const read = (pid: string, file: string) => {
    try {
      return readFileSync(`/proc/${pid}/${file}`, 'utf8');
    } catch {
      return ''; // ended meanwhile
    }
  };
  // backends rewrite their command line; only the postmaster still shows its arguments
  const postmaster = pids.find((pid) => read(pid, 'cmdline').split('\0').join(' ').includes(` -p ${server.port} `));
  if (!postmaster) throw new Error(`no postmaster listening on port ${server.port}`);
  // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so split after ')'
  const children = pids.filter((pid) => {
    const stat = read(pid, 'stat');
    return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] === postmaster;
  });
  return [postmaster, ...children].map(Number);
}

function signal(pids: number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // ended meanwhile
    }
  }
}

function lines(child: ChildProcess): AsyncIterator<string> {
  return createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
}

describe('stop() with the database server frozen (SIGSTOP)', () => {
  it('returns within timeout + 1 s, reports what it abandoned, holds no connection, and the process exits on its own', async () => {
    const hold = defineTask<object>('frozen-hold', { handler: async () => {} });
    const ids = [(await enqueue(pool, hold, {})).id, (await enqueue(pool, hold, {})).id];
    const child = spawn(process.execPath, ['--conditions=@leasehold/source', '--import', 'tsx', 'test/core/frozen-stop-child.ts', server.connectionString], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(child, 'exit');
    const out = lines(child);
    let frozen: number[] = [];
    try {
      expect((await out.next()).value).toBe('running');
      frozen = serverPids();
      signal(frozen, 'SIGSTOP');
      child.stdin!.end('stop\n'); // and EOF: an open stdin would keep the child alive
      const report = JSON.parse((await out.next()).value as string) as {
        stopMs: number;
        abandoned: { ids: string[]; connections: number } | undefined;
        checkedOut: number;
        settledMs: number;
        waiting: number;
      };
      expect(report.stopMs).toBeGreaterThanOrEqual(500);
      expect(report.stopMs).toBeLessThan(500 + 1_000);
      expect(report.abandoned?.ids.sort()).toEqual(ids.sort());
      expect(report.abandoned?.connections).toBeGreaterThan(0);
      expect(report.waiting).toBe(0);
      // nothing checked out once the pool's own connection attempts time out (1 s)
      expect(report.checkedOut).toBe(0);
      expect(report.settledMs).toBeLessThan(1_000 + 500);
      expect((await out.next()).value).toBe('ended');
      // still frozen: the process ends because nothing of the worker's keeps it alive
      const deadline = setTimeout(() => child.kill('SIGKILL'), 5_000);
      const [code, killedBy] = (await exited) as [number | null, NodeJS.Signals | null];
      clearTimeout(deadline);
      expect({ code, killedBy }).toEqual({ code: 0, killedBy: null });
      expect(stderr.split('\n').filter((line) => line.includes('stopped without an answer'))).toHaveLength(1); // one log line (default logger: console)
      expect(stderr).toContain(`ids ${ids.join(', ')}`);
    } finally {
      signal(frozen, 'SIGCONT');
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    // after the thaw, each task is in one of the two states a crash-safe stop allows: still
    // processing under the abandoned claim (to be taken over when its lease expires, as after a
    // crash), or pending because the release the worker sent before it gave up sat in the frozen
    // server's socket and ran on the thaw (the fence let it through: nobody claimed meanwhile).
    // Which one depends on whether an idle pool connection carried the release; neither loses it.
    const { rows } = await pool.query<{ status: string; lease_version: string; leased: boolean }>(
      `SELECT status, lease_version, lease_until IS NOT NULL AS leased
         FROM leasehold.task WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [ids],
    );
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.lease_version).toBe('1');
      expect([
        { status: 'processing', leased: true },
        { status: 'pending', leased: false },
      ]).toContainEqual({ status: row.status, leased: row.leased });
    }
  });
});
