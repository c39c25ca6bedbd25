import { isLeaseholdError, TASK_STATUSES, type TaskStatus } from '@leasehold/core';
import { checkKey, checkName, checkRowId, checkText } from '@leasehold/core/internal';
import { HTTPException } from 'hono/http-exception';
import { TABLE_KINDS, type TableKind } from './options.js';

/** A 400 with a message for people (shown escaped on the error page). */
export function badRequest(message: string): HTTPException {
  return new HTTPException(400, { message });
}

/** Runs a core input check and turns its `ConfigError` into a 400 naming the field. */
function checked<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (isLeaseholdError(error, 'CONFIG')) throw badRequest((error as Error).message.replaceAll('`', '"'));
    throw error;
  }
}

/** A form or query value as one string ('' when absent; the first when repeated). */
export function one(value: unknown): string {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === 'string' ? v : '';
}

/** A form value that may repeat, as strings. */
export function many(value: unknown): string[] {
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.filter((v): v is string => typeof v === 'string');
}

export function parseStatus(value: string): TaskStatus | null {
  if (value === '') return null;
  if (!(TASK_STATUSES as readonly string[]).includes(value)) throw badRequest(`Unknown status "${value}"`);
  return value as TaskStatus;
}

export function parseTableKind(value: string): TableKind {
  if (!(TABLE_KINDS as readonly string[]).includes(value)) throw badRequest(`Unknown table "${value}"`);
  return value as TableKind;
}

export const parseName = (value: string, field: string): string | null => (value === '' ? null : checked(() => checkName(value, field)));
export const parseKey = (value: string, field: string): string | null => (value === '' ? null : checked(() => checkKey(value, field)));
export const parseRowId = (value: string, field: string): string => checked(() => checkRowId(value, field));

const LOCAL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?$/;

/** A `datetime-local` value (read as UTC) or an ISO 8601 time; null when empty. */
export function parseTime(value: string, field: string): Date | null {
  if (value === '') return null;
  const date = LOCAL_TIME.test(value) ? new Date(/(Z|[+-]\d{2}:\d{2})$/.test(value) ? value : `${value}Z`) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw badRequest(`"${field}" must be a time such as 2026-12-01T03:00, got "${value}"`);
  return date;
}

/** The reason of a retry / skip: storable, non-blank text of at most 2,000 bytes. */
export function parseReason(value: string): string {
  const text = checked(() => checkText(value, 'reason', { maxBytes: 2_000, subject: 'the reason' }));
  if (text.trim() === '') throw badRequest('Say why, for the next person: the reason is kept on the row');
  return text.trim();
}

/** Ids of a retry / skip: 1 to 1,000 row ids, without repeats. */
export function parseIds(values: readonly string[]): string[] {
  if (values.length === 0) throw badRequest('Select at least one row');
  if (values.length > 1_000) throw badRequest('At most 1,000 rows at a time');
  return [...new Set(values.map((v) => parseRowId(v, 'ids')))];
}
