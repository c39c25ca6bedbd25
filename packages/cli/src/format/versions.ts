import {
  nonDeterminismDeadCounts,
  taskVersions,
  type Executor,
  type LiveWorker,
  type NonDeterminismDeadRow,
  type TaskVersionRow,
} from '@leasehold/core';
import { errorCode } from '@leasehold/core/internal';
import { formatAge } from './age.js';
import { renderTable } from './table.js';

// SQLSTATEs of a schema migrated before task versions (core migration 11): no task_worker
// table, no version column
const BEFORE_VERSIONS = new Set(['42P01', '42703']);

/** Workflow versions in flight, as `leasehold stats` shows them (`--json`: `versions`). */
export interface VersionsReport {
  /** Unfinished runs per task name and version, with how many live workers accept each. */
  readonly versions: readonly TaskVersionRow[];
  /** The live workers and the versions they accept. */
  readonly workers: readonly LiveWorker[];
  /** Dead runs that failed replay (`NonDeterminismError`), per name and version. */
  readonly nonDeterminismDead: readonly NonDeterminismDeadRow[];
}

/** The versions of `schema`'s task table; null on a schema that predates them. */
export async function readVersions(executor: Executor, schema: string): Promise<VersionsReport | null> {
  try {
    const [{ versions, workers }, nonDeterminismDead] = await Promise.all([
      taskVersions(executor, { schema }),
      nonDeterminismDeadCounts(executor, { schema }),
    ]);
    return { versions, workers, nonDeterminismDead };
  } catch (error) {
    if (BEFORE_VERSIONS.has(errorCode(error) ?? '')) return null; // the driver's code, under core's DatabaseNotReadyError
    throw error;
  }
}

/** Runs no live worker can claim (none is flagged while no worker reports what it accepts). */
export function unclaimable(report: VersionsReport): TaskVersionRow[] {
  return report.versions.filter((v) => v.acceptedBy === 0);
}

/** Whether the versions deserve a section: several versions of a name, runs nobody can claim, or replay failures. */
export function versionsWorthShowing(report: VersionsReport): boolean {
  const names = new Set(report.versions.map((v) => v.name));
  return names.size < report.versions.length || unclaimable(report).length > 0 || report.nonDeterminismDead.length > 0;
}

/** The versions section of `leasehold stats`: one line per task version, then what needs a person. */
export function renderVersions(report: VersionsReport): string {
  const dead = new Map(report.nonDeterminismDead.map((d) => [`${d.name}@${d.version}`, d.dead]));
  const rows = report.versions.map((v) => [
    v.name, v.version, v.pending, v.processing, v.waiting, dead.get(`${v.name}@${v.version}`) ?? 0, formatAge(v.oldestAgeMs),
    v.acceptedBy === null ? '?' : v.acceptedBy === 0 ? 'NONE' : v.acceptedBy,
  ]);
  // replay failures of a version with no unfinished run still get a line
  for (const d of report.nonDeterminismDead) {
    if (!report.versions.some((v) => v.name === d.name && v.version === d.version)) rows.push([d.name, d.version, 0, 0, 0, d.dead, '—', '—']);
  }
  rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])) || Number(a[1]) - Number(b[1]));
  const headers = ['TASK', 'VERSION', 'PENDING', 'PROCESSING', 'WAITING', 'DEAD (REPLAY)', 'OLDEST', 'LIVE WORKERS ACCEPTING'];
  const lines = [renderTable(headers, rows, [1, 2, 3, 4, 5, 6, 7])];
  for (const v of unclaimable(report)) {
    const runs = v.pending + v.processing + v.waiting;
    const waiting = runs === 1 ? 'its 1 run waits' : `its ${runs} runs wait`;
    // no worker has the name at all: not a version to deploy, a worker (or a spelling) to check
    if (v.servedBy === 0) lines.push(`! ${v.name}: no live worker runs this task; ${waiting} until a worker with "${v.name}" among its tasks starts (not deployed? the name misspelt?)`);
    else lines.push(`! ${v.name} version ${v.version}: no live worker accepts it; ${waiting} until a worker whose definition accepts version ${v.version} starts`);
  }
  const failed = report.nonDeterminismDead.reduce((n, d) => n + d.dead, 0);
  if (failed > 0) {
    lines.push(`! ${failed} dead run${failed === 1 ? '' : 's'} failed replay (NonDeterminismError): deploy code that can run them, then "leasehold dead retry <ids>" resumes them with their recorded steps`);
  }
  if (report.workers.length === 0) lines.push('(no live worker reports the versions it accepts)');
  return lines.join('\n');
}
