import { describe, expect, it } from 'vitest';
import { parseDuration } from './duration.js';
import { ConfigError } from './errors.js';
import { validateIdentifier } from './identifier.js';

describe('parseDuration', () => {
  it('takes milliseconds and ms strings', () => {
    expect(parseDuration(250, 'lease')).toBe(250);
    expect(parseDuration('30s', 'lease')).toBe(30_000);
    expect(parseDuration('5m', 'lease')).toBe(300_000);
    expect(parseDuration(0, 'delay', { allowZero: true })).toBe(0);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, 'soon', '', '-5s'])('rejects %s with a ConfigError naming the option', (value) => {
    expect(() => parseDuration(value as number, 'lease')).toThrow(ConfigError);
    expect(() => parseDuration(value as number, 'lease')).toThrow(/`lease`/);
  });
});

describe('validateIdentifier', () => {
  it('accepts plain lower-case identifiers', () => {
    expect(validateIdentifier('leasehold_jobs', 'schema')).toBe('leasehold_jobs');
  });

  it.each(['a"b', 'a;drop', 'A', '1a', '', 'a b', 'x'.repeat(49), "it's"])('rejects %j', (value) => {
    expect(() => validateIdentifier(value, 'schema')).toThrow(ConfigError);
  });
});

describe('duration bounds', () => {
  it('refuses timers past what setTimeout can wait, but allows long stored delays', async () => {
    const { MAX_DELAY_MS, MAX_TIMER_MS } = await import('./duration.js');
    expect(() => parseDuration('30d', 'pollInterval')).toThrow(/`pollInterval` to be at most/);
    expect(parseDuration(MAX_TIMER_MS, 'lease')).toBe(MAX_TIMER_MS);
    expect(parseDuration('365d', 'delay', { max: MAX_DELAY_MS })).toBe(365 * 86_400_000);
    expect(() => parseDuration(1e300, 'delay', { max: MAX_DELAY_MS })).toThrow(ConfigError);
  });

  it('refuses schema names PostgreSQL reserves', () => {
    expect(() => validateIdentifier('pg_temp', 'schema')).toThrow(/reserved/);
  });
});
