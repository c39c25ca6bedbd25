import { describe, expect, it } from 'vitest';
import { ConfigError } from '../leasehold-error.js';
import { checkHeaders } from './headers.js';
import { INPUT_LIMITS } from './limits.js';
import { checkKey, checkName, checkText } from './text.js';

function refusal(run: () => unknown): ConfigError | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  return undefined;
}

const SECRET = 'tok_s3cr3t_value';

describe('checkText', () => {
  it('accepts storable text: pairs, emoji, the text \\u0000, Latin-1', () => {
    for (const text of ['a', '😀', 'x\ud83d\ude00y', '\\u0000', 'é', '\uffff']) expect(checkName(text, 'name')).toBe(text);
  });

  it.each([
    ['NUL', `${SECRET}\u0000`, /NUL character \(U\+0000\) at index 16/],
    ['a lone high surrogate at the end', `${SECRET}\ud800`, /lone UTF-16 surrogate at index 16/],
    ['a lone low surrogate', `\udc00${SECRET}`, /lone UTF-16 surrogate at index 0/],
    ['a reversed pair', '\udc00\ud800', /lone UTF-16 surrogate at index 0/],
    ['the empty string', '', /non-empty/],
    ['a number', 5, /to be a string, got 5/],
  ])('refuses %s, naming the option and never showing the text', (_label, value, message) => {
    const error = refusal(() => checkKey(value, 'events[3].aggregateId'));
    expect(error?.option).toBe('events[3].aggregateId');
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toContain(SECRET);
  });

  it('counts UTF-8 bytes, not characters', () => {
    expect(checkKey('x'.repeat(INPUT_LIMITS.keyBytes), 'groupKey')).toHaveLength(INPUT_LIMITS.keyBytes);
    expect(refusal(() => checkKey('x'.repeat(INPUT_LIMITS.keyBytes + 1), 'groupKey'))?.message).toMatch('at most 1024 bytes of UTF-8, got 1025');
    // 342 characters, 1,026 bytes
    expect(refusal(() => checkKey('€'.repeat(342), 'groupKey'))?.message).toMatch('got 1026');
    expect(refusal(() => checkName('é'.repeat(101), 'name'))?.message).toMatch(`at most ${INPUT_LIMITS.nameBytes} bytes`);
    expect(checkText('', 'value', { maxBytes: 1, allowEmpty: true })).toBe('');
  });
});

describe('checkHeaders', () => {
  it('returns a plain record of the headers', () => {
    expect(checkHeaders({ trace: 'abc', empty: '' }, 'event.headers')).toEqual({ trace: 'abc', empty: '' });
    const proto = checkHeaders(JSON.parse('{"__proto__":"kept"}'), 'event.headers');
    expect(JSON.stringify(proto)).toBe('{"__proto__":"kept"}');
  });

  it('names the header at fault and never shows a value', () => {
    const option = (headers: unknown) => refusal(() => checkHeaders(headers, 'events[3].headers'));
    expect(option({ 'x-tenant-token': `${SECRET}\u0000` })).toMatchObject({ option: 'events[3].headers.x-tenant-token' });
    expect(option({ 'x-tenant-token': `${SECRET}\ud800` })?.message).not.toContain(SECRET);
    expect(option({ 'x-tenant-token': 'x'.repeat(INPUT_LIMITS.headerValueBytes + 1) })?.option).toBe('events[3].headers.x-tenant-token');
    expect(option({ a: 1 })?.option).toBe('events[3].headers.a');
    const badName = option({ ok: '1', 'x\u0000': 'v' });
    expect(badName?.option).toBe('events[3].headers');
    expect(badName?.message).toMatch(/the name of header 2 in `events\[3\].headers`/);
    expect(option({ ['\ud800']: 'v' })?.option).toBe('events[3].headers');
    expect(option(['a'])?.option).toBe('events[3].headers');
    const many = Object.fromEntries(Array.from({ length: INPUT_LIMITS.headerCount + 1 }, (_, i) => [`h${i}`, 'v']));
    expect(option(many)?.message).toMatch(`at most ${INPUT_LIMITS.headerCount} headers`);
  });
});
