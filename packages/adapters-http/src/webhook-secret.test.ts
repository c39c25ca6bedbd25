import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { isLeaseholdError } from '@leasehold/core';
import { generateWebhookSecret, parseWebhookSecrets } from './webhook-secret.js';

describe('parseWebhookSecrets', () => {
  it('accepts whsec_ secrets with or without the prefix, one or several', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(parseWebhookSecrets(secret)).toHaveLength(1);
    expect(parseWebhookSecrets([secret, secret.slice(6)])).toHaveLength(2);
  });

  it('rejects bad secrets with a ConfigError that never shows the value', () => {
    const short = `whsec_${Buffer.alloc(16, 7).toString('base64')}`;
    const notBase64 = 'whsec_this is not base64 at all!!';
    for (const [value, option] of [[short, 'signing'], [notBase64, 'signing'], [[generateWebhookSecret(), short], 'signing[1]']] as const) {
      let thrown: unknown;
      try {
        parseWebhookSecrets(value, 'signing');
      } catch (error) {
        thrown = error;
      }
      expect(isLeaseholdError(thrown, 'CONFIG')).toBe(true);
      expect((thrown as { option: string }).option).toBe(option);
      const text = inspect(thrown);
      for (const s of [short, notBase64, short.slice(6)]) expect(text).not.toContain(s);
    }
    expect(() => parseWebhookSecrets([])).toThrow(/non-empty list/);
  });

  it('never prints the key when inspected or serialised', () => {
    const secret = generateWebhookSecret();
    const [key] = parseWebhookSecrets(secret);
    expect(inspect(key, { showHidden: true, depth: 5 })).not.toContain(secret.slice(6));
    expect(JSON.stringify({ key })).toBe('{"key":"[WebhookKey]"}');
  });
});
