// Bad settings are a ConfigError naming the option, thrown before any SQL runs.
import { describe, expect, it } from 'vitest';
import { claim, ConfigError, dispatchOnce, extendLease, isLeaseholdError, reschedule, type PgQueryable } from '@leasehold/core';

const noSql: PgQueryable = {
  query: async () => {
    throw new Error('SQL ran');
  },
};
const token = { id: '1', leaseVersion: 1 };

describe('configuration is checked before anything touches the database', () => {
  it.each([
    ['lease', { owner: 'w', batch: 1, lease: 0 }],
    ['lease', { owner: 'w', batch: 1, lease: -5 }],
    ['lease', { owner: 'w', batch: 1, lease: Number.NaN }],
    ['lease', { owner: 'w', batch: 1, lease: Number.POSITIVE_INFINITY }],
    ['lease', { owner: 'w', batch: 1, lease: 'soon' }],
    ['batch', { owner: 'w', batch: 0, lease: '1s' }],
    ['batch', { owner: 'w', batch: -1, lease: '1s' }],
    ['batch', { owner: 'w', batch: 1.5, lease: '1s' }],
    ['owner', { owner: '', batch: 1, lease: '1s' }],
    ['schema', { owner: 'w', batch: 1, lease: '1s', schema: 'bad;name' }],
  ])('claim rejects a bad `%s`', async (option, options) => {
    const error = await claim(noSql, options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(isLeaseholdError(error, 'CONFIG')).toBe(true);
    expect((error as ConfigError).option).toBe(option);
    expect((error as Error).message).toContain(`\`${option}\``);
  });

  it('reschedule rejects a negative delay; extendLease a non-positive lease; dispatchOnce a zero batch', async () => {
    await expect(reschedule(noSql, token, { delay: -1, error: 'x' })).rejects.toMatchObject({ code: 'CONFIG', option: 'delay' });
    await expect(extendLease(noSql, token, { lease: 0 })).rejects.toMatchObject({ code: 'CONFIG', option: 'lease' });
    await expect(dispatchOnce(noSql, async () => {}, { owner: 'w', batch: 0 })).rejects.toMatchObject({
      code: 'CONFIG',
      option: 'batch',
    });
  });
});
