// CPU time the PostgreSQL backends of the bench database used, read from /proc (the server runs
// on this host). Wall-clock figures swing with whatever else the machine runs; CPU per job does
// not, so it is what tells two variants apart on a shared machine.
import { readFileSync } from 'node:fs';
import type pg from 'pg';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** Application name of every connection a bench child opens, so its backends can be told apart. */
export const CHILD_APPLICATION_NAME = 'leasehold-bench-child';

/**
 * CPU ms (user + system) of each backend a bench child opened, by pid; empty off Linux or when
 * /proc is not readable.
 */
export async function backendCpu(admin: pg.Pool): Promise<Map<number, number>> {
  const r = await admin.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
    [CHILD_APPLICATION_NAME],
  );
  const out = new Map<number, number>();
  for (const { pid } of r.rows) {
    const ms = processCpuMs(pid);
    if (ms !== undefined) out.set(pid, ms);
  }
  return out;
}

/** CPU ms used between two samples by the backends present in both (a backend that ended in between is lost). */
export function cpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, end] of after) ms += end - (before.get(pid) ?? 0);
  return ms;
}

function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // fields after the command name, which is in parentheses and may contain spaces
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
