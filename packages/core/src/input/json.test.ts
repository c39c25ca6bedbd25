import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../leasehold-error.js';
import { jsonValueFault, toJsonText } from './json.js';
import { INPUT_LIMITS } from './limits.js';
import { textFault } from './text.js';

function nested(levels: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { v: value };
  return value;
}

function refusal(value: unknown): ConfigError | undefined {
  try {
    toJsonText(value, 'events[3].payload');
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  return undefined;
}

describe('toJsonText', () => {
  it('passes JSON through unchanged, escaped backslashes included', () => {
    expect(toJsonText({ a: [1, 'x'], b: null }, 'payload')).toBe('{"a":[1,"x"],"b":null}');
    // the six characters \u0000 as text, in a value and in a key, are not a NUL
    const literal = { s: '\\u0000', '\\u0000': '\\\\u0000', t: '\\ud800' };
    expect(JSON.parse(toJsonText(literal, 'payload'))).toEqual(literal);
    expect(toJsonText('😀', 'payload')).toBe('"😀"');
  });

  it.each([
    ['NUL in a value', { s: 'a\u0000b' }, /NUL/],
    ['NUL in a key', { ['k\u0000']: 1 }, /NUL/],
    ['NUL after an escaped backslash', { s: '\\\u0000' }, /NUL/],
    ['a lone high surrogate', { s: 'x\ud800' }, /lone UTF-16 surrogate \(\\ud800\)/],
    ['a lone low surrogate', ['\udc00y'], /lone UTF-16 surrogate \(\\udc00\)/],
    ['a reversed pair', '\udc00\ud800', /lone/],
    ['a function', () => 1, /a function is not JSON/],
    ['undefined', undefined, /undefined is not JSON/],
  ])('refuses %s with a ConfigError naming the field, never quoting the value', (_label, value, message) => {
    const error = refusal(value);
    expect(error?.option).toBe('events[3].payload');
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toContain('a\u0000b');
  });

  it(`allows ${INPUT_LIMITS.jsonDepth} levels of nesting and refuses one more, however deep`, () => {
    expect(refusal(nested(INPUT_LIMITS.jsonDepth))).toBeUndefined();
    expect(refusal(nested(INPUT_LIMITS.jsonDepth + 1))?.message).toMatch(`nested deeper than ${INPUT_LIMITS.jsonDepth} levels`);
    // deep enough to overflow JSON.stringify itself: the same answer, not a RangeError
    expect(refusal(nested(200_000))?.message).toMatch(`nested deeper than ${INPUT_LIMITS.jsonDepth} levels`);
    // the shortest text nested one level too deep (each level opens and closes): no shortcut
    // for short text lets it through
    let bare: unknown = [];
    for (let i = 1; i <= INPUT_LIMITS.jsonDepth; i++) bare = [bare];
    expect(JSON.stringify(bare)).toHaveLength(2 * (INPUT_LIMITS.jsonDepth + 1));
    expect(refusal(bare)?.message).toMatch(`nested deeper than ${INPUT_LIMITS.jsonDepth} levels`);
    // brackets inside strings are text
    expect(refusal({ s: '['.repeat(10_000), t: '{'.repeat(10_000) })).toBeUndefined();
  });

  it(`allows ${INPUT_LIMITS.jsonBytes} bytes of JSON text and refuses one more`, () => {
    const fits = 'x'.repeat(INPUT_LIMITS.jsonBytes - 2); // plus two quotes
    expect(refusal(fits)).toBeUndefined();
    expect(refusal(`${fits}x`)?.message).toMatch(`at most ${INPUT_LIMITS.jsonBytes} bytes`);
    // bytes, not characters: 3 bytes each
    expect(refusal('€'.repeat(Math.ceil(INPUT_LIMITS.jsonBytes / 3)))?.message).toMatch('bytes');
  });

  it('refuses a string exactly when the text rule does, and round-trips the rest', () => {
    const unit = fc.oneof(
      fc.constantFrom('\\', 'u', '0', 'u0000', '\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '"', '[', '{'),
      fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
    );
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 12 }), fc.string({ unit, maxLength: 4 }), (text, key) => {
        const value = { [key]: [text] };
        const refused = refusal(value) !== undefined;
        expect(refused).toBe(textFault(text) !== undefined || textFault(key) !== undefined);
        if (!refused) expect(JSON.parse(toJsonText(value, 'payload'))).toEqual(value);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('the JSON rule: what JSON.stringify would change or drop is refused, naming the path', () => {
  class Point {
    constructor(readonly x: number) {}
  }
  it.each([
    ['a Date', { when: new Date(0) }, '.when', 'a Date is not JSON; pass an ISO string'],
    ['a Map', { a: { seen: new Map() } }, '.a.seen', 'a Map is not JSON'],
    ['a Set', [1, new Set([1])], '[1]', 'a Set is not JSON; pass an array'],
    ['NaN', { n: Number.NaN }, '.n', 'NaN is not JSON'],
    ['Infinity', { n: [Number.POSITIVE_INFINITY] }, '.n[0]', 'Infinity is not JSON'],
    ['undefined in an array', { items: [1, undefined] }, '.items[1]', 'undefined is not JSON'],
    ['a hole in an array', { items: Object.assign([1], { 2: 3 }) }, '.items[1]', 'undefined is not JSON'],
    ['a function', { cb: () => 1 }, '.cb', 'a function is not JSON'],
    ['a bigint', { id: 1n }, '.id', 'a bigint is not JSON'],
    ['a symbol', { s: Symbol('x') }, '.s', 'a symbol is not JSON'],
    ['a class instance', { p: new Point(1) }, '.p', 'a Point instance is not JSON'],
    ['binary data', { b: Buffer.from('x') }, '.b', 'binary data is not JSON; pass a base64 string'],
    ['a key that is not an identifier', { 'a b': { 'x-y': new Date(0) } }, '["a b"]["x-y"]', 'a Date'],
  ])('%s', (_label, value, path, problem) => {
    expect(jsonValueFault(value)).toMatchObject({ path });
    expect(jsonValueFault(value)?.problem).toContain(problem);
    const error = refusal(value);
    expect(error?.option).toBe(`events[3].payload${path}`);
    expect(error?.message).toMatch(`events[3].payload${path}: ${problem}`);
  });

  it('passes JSON, an undefined field (absent either way) and an object without a prototype', () => {
    const bare = Object.assign(Object.create(null) as object, { a: 1 });
    for (const value of [null, 0, -1.5, '', 'x', true, [], {}, { a: [1, 'b', null, { c: false }] }, { skip: undefined }, bare]) {
      expect(jsonValueFault(value)).toBeUndefined();
    }
    expect(toJsonText({ a: 1, skip: undefined }, 'payload')).toBe('{"a":1}');
  });

  it('refuses a value that refers to itself as nested too deep, at the value', () => {
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(refusal(loop)).toMatchObject({ option: 'events[3].payload' });
    expect(refusal(loop)?.message).toMatch(/nested deeper than \d+ levels \(or it refers to itself\)/);
  });

  it('agrees with a JSON round trip on every value it passes', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(jsonValueFault(value)).toBeUndefined();
      }),
      { numRuns: 500 },
    );
    fc.assert(
      // what passes comes back as it went in (undefined fields aside, which read the same)
      fc.property(fc.anything({ withDate: true, withMap: true, withSet: true, withBigInt: true, withTypedArray: true, withSparseArray: true, withNullPrototype: true }), (value) => {
            // (-0 comes back 0: the same number, so the rule lets it through)
        if (jsonValueFault(value) === undefined && value !== undefined) expect(JSON.parse(JSON.stringify(value))).toEqual(positiveZero(value));
      }),
      { numRuns: 500 },
    );
  });
});

function positiveZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(positiveZero);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, positiveZero(v)]));
  return value;
}
