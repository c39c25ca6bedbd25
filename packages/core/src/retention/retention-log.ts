import type { WorkerLog } from '../worker/worker-log.js';
import type { RetentionReport } from './retention-runner.js';

/** One info record per retention turn that deleted anything: what left, and whether more is due. */
export function logRetention(log: WorkerLog, report: RetentionReport): void {
  const parts = Object.entries(report.deleted).filter(([, n]) => n > 0).map(([status, n]) => `${n} ${status}`);
  const more = report.behind ? '; more rows are due, the next turn goes on' : '';
  log.write('info', `retention: deleted ${parts.join(', ')} row(s) of ${report.table} in ${report.batches} batch(es), ${report.durationMs} ms${more}`, {
    table: report.table,
    deleted: report.deleted,
    batches: report.batches,
    durationMs: report.durationMs,
  });
}
