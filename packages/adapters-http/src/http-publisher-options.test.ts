import { describe, expect, it } from 'vitest';
import { isLeaseholdError } from '@leasehold/core';
import { normalizeHttpPublisherOptions, type HttpPublisherOptions } from './http-publisher-options.js';

function optionAtFault(options: HttpPublisherOptions): string | undefined {
  try {
    normalizeHttpPublisherOptions(options);
  } catch (error) {
    if (isLeaseholdError(error, 'CONFIG')) return (error as unknown as { option: string }).option;
    throw error;
  }
  return undefined;
}

describe('normalizeHttpPublisherOptions', () => {
  it('fills the documented defaults', () => {
    const o = normalizeHttpPublisherOptions({ url: 'https://example.com/hook' });
    expect(o).toMatchObject({
      timeoutMs: 10_000,
      idempotencyHeader: 'Idempotency-Key',
      conflict: 'success',
      maxRetryAfterMs: 3_600_000,
      maxBodyBytes: 16_384,
      excerptLength: 500,
      hideUrlPath: false,
      keys: [],
    });
    expect(Object.isFrozen(o)).toBe(true);
  });

  it('names the option at fault', () => {
    const url = 'https://example.com/hook';
    expect(optionAtFault({ url: 'example.com/hook' })).toBe('url');
    expect(optionAtFault({ url: 'file:///etc/passwd' })).toBe('url');
    expect(optionAtFault({ url: 'https://u:p@example.com/' })).toBe('url');
    expect(optionAtFault({ url, timeout: 0 })).toBe('timeout');
    expect(optionAtFault({ url, timeout: 'soon' })).toBe('timeout');
    expect(optionAtFault({ url, conflict: 'ignore' as never })).toBe('conflict');
    expect(optionAtFault({ url, idempotencyHeader: 'Idempotency Key' })).toBe('idempotencyHeader');
    expect(optionAtFault({ url, signingSecrets: 'whsec_short' })).toBe('signingSecrets');
    expect(optionAtFault({ url, maxBodyBytes: -1 })).toBe('maxBodyBytes');
    expect(optionAtFault({ url, classify: 'yes' as never })).toBe('classify');
    expect(optionAtFault({ url: () => url })).toBeUndefined();
  });

  it('checks fixed headers once, at construction, naming the header and never showing its value', () => {
    const url = 'https://example.com/hook';
    const secret = 'tok_s3cr3t_s3cr3t';
    for (const value of [`${secret}\u0000`, `${secret}\ud800`, `${secret}\r\nx-injected: 1`, `${secret}€`, 'x'.repeat(8_193)]) {
      let thrown: unknown;
      try {
        normalizeHttpPublisherOptions({ url, headers: { 'x-tenant-token': value } });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(value.slice(-12))).toMatchObject({ code: 'CONFIG', option: 'headers.x-tenant-token' });
      expect(String((thrown as Error).message)).not.toContain(secret);
    }
    expect(optionAtFault({ url, headers: { 'x a': 'v' } })).toBe('headers.x a');
    expect(optionAtFault({ url, headers: { 'x\u0000': 'v' } })).toBe('headers');
    expect(optionAtFault({ url, headers: { authorization: 'Bearer abc', 'x-latin': 'é' } })).toBeUndefined();
  });
});
