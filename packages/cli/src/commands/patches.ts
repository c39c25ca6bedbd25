import { patchUsage, type PatchUsageRow } from '@leasehold/core';
import { CommandError } from '../errors.js';
import { EXIT_CODES } from '../exit-codes.js';
import { renderTable } from '../format/table.js';
import type { CommandHandler } from './context.js';

/** `leasehold patches --json` output. */
export interface PatchesReport {
  readonly schema: string;
  /** Per task and patch id (core's `patchUsage`); `removable` when no unfinished run needs the old branch. */
  readonly patches: ReadonlyArray<PatchUsageRow & { readonly removable: boolean }>;
}

/** Whether the old branch (and the `patched` call) can go: no unfinished run took or may take the old path. */
function removable(p: PatchUsageRow): boolean {
  return p.oldPath === 0 && p.undecided === 0;
}

/** The patches as a text table, then how to read it. */
export function renderPatches(report: PatchesReport): string {
  if (report.patches.length === 0) {
    return `no unfinished run in schema "${report.schema}" recorded a patch (give --task and --patch to count the runs that have not reached one yet)`;
  }
  const rows = report.patches.map((p) => [
    p.task, p.patch, p.newPath, p.oldPath, p.undecided,
    p.firstNewAt === null ? '—' : p.firstNewAt.toISOString().slice(0, 19).replace('T', ' '),
    p.removable ? 'yes' : 'no',
  ]);
  const table = renderTable(['TASK', 'PATCH', 'NEW PATH', 'OLD PATH', 'UNDECIDED', 'FIRST NEW (UTC)', 'OLD BRANCH REMOVABLE'], rows, [2, 3, 4]);
  return `${table}

OLD PATH: unfinished runs that recorded the patch false; they replay the old branch.
UNDECIDED: unfinished runs without a marker, created before FIRST NEW (all of them when no run took
the new path yet); they may have gone past that point on old code. The old branch can go when both
are 0 and no worker runs code without the patch.`;
}

/** `leasehold patches [--task NAME] [--patch ID]`: how many unfinished runs still need each patch's old branch. */
export const patchesCommand: CommandHandler = async (ctx) => {
  const tables = await ctx.tables();
  if (tables.task === undefined) throw new CommandError(`schema "${tables.schema}" has no task table`);
  const { task, patch, json } = ctx.invocation;
  const rows = await patchUsage(ctx.pool, { schema: tables.schema, task, patch });
  const report: PatchesReport = { schema: tables.schema, patches: rows.map((p) => ({ ...p, removable: removable(p) })) };
  ctx.io.out(json ? JSON.stringify(report) : renderPatches(report));
  return EXIT_CODES.ok;
};
