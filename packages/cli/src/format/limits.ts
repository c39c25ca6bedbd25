import { limitList, type Executor, type LimitRow, type Rate } from '@leasehold/core';
import { errorCode } from '@leasehold/core/internal';
import { renderTable } from './table.js';

// SQLSTATE undefined_table: a schema migrated before limits existed (core migration 7)
const UNDEFINED_TABLE = '42P01';

/** The limits of `schema`'s task table (see `limitList`); none on a schema that predates them. */
export async function readLimits(executor: Executor, schema: string): Promise<LimitRow[]> {
  try {
    return await limitList(executor, schema);
  } catch (error) {
    if (errorCode(error) === UNDEFINED_TABLE) return []; // the driver's code, under core's DatabaseNotReadyError
    throw error;
  }
}

/** `50/1s`, `10/1m`; `—` without a rate. */
function formatRate(rate: Rate | null): string {
  if (rate === null) return '—';
  const units: [number, string][] = [[86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'm'], [1_000, 's']];
  const [size, unit] = units.find(([ms]) => rate.periodMs % ms === 0) ?? [1, 'ms'];
  return `${rate.limit}/${rate.periodMs / size}${unit}`;
}

/** The limits as a text table: bounds, then what runs and waits under each now. */
export function renderLimits(limits: readonly LimitRow[]): string {
  const rows = limits.map((l) => [
    l.name,
    l.taskNames.join(','),
    l.concurrency ?? '—',
    l.concurrencyPerKey ?? '—',
    formatRate(l.rate),
    formatRate(l.ratePerKey),
    l.running,
    l.startsInWindow,
    l.waiting,
    l.seenBy ?? '—',
  ]);
  const headers = ['LIMIT', 'TASKS', 'CONCURRENCY', 'PER KEY', 'RATE', 'RATE PER KEY', 'RUNNING', 'STARTS IN WINDOW', 'PENDING', 'SEEN BY'];
  return renderTable(headers, rows, [2, 3, 4, 5, 6, 7, 8]);
}
