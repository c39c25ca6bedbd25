import { describe, expect, it } from 'vitest';
import { ConfigError } from '../leasehold-error.js';
import { checkInteger, checkRowId, isRowId, parseInteger } from './integer.js';
import { INTEGER_RANGES } from './limits.js';

describe('parseInteger and checkInteger', () => {
  it('accepts the bounds themselves and refuses one past either', () => {
    const { min, max } = INTEGER_RANGES.priority;
    expect(checkInteger(min, 'priority', INTEGER_RANGES.priority)).toBe(min);
    expect(checkInteger(max, 'priority', INTEGER_RANGES.priority)).toBe(max);
    expect(() => checkInteger(min - 1, 'priority', INTEGER_RANGES.priority)).toThrow(ConfigError);
    expect(() => checkInteger(max + 1, 'priority', INTEGER_RANGES.priority)).toThrow(/`priority` to be an integer between/);
  });

  it.each([1.5, Number.NaN, Number.POSITIVE_INFINITY, '1', null, undefined, 1n])('refuses %s', (value) => {
    expect(() => parseInteger(value, 'batch', 1, 10)).toThrow(ConfigError);
  });
});

describe('row ids', () => {
  it('are positive bigints as decimal text', () => {
    for (const id of ['1', '42', '9223372036854775807']) expect(checkRowId(id, 'id')).toBe(id);
    // nineteen digits, but past bigint: PostgreSQL would fail with 22003
    for (const id of ['9223372036854775808', '9999999999999999999', '0', '01', '-1', '1.0', ' 1', '', 1, 1n, null]) {
      expect(isRowId(id)).toBe(false);
      expect(() => checkRowId(id, 'id')).toThrow(ConfigError);
    }
  });
});
