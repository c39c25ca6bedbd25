import { ConfigError } from '../leasehold-error.js';
import { INPUT_LIMITS } from './limits.js';

/**
 * Serialises a value bound for a jsonb column and checks it once, where it enters: JSON that
 * comes back as it went in (see {@link jsonValueFault}: no `Date`, `Map`, class instance,
 * function, `NaN`, bigint or `undefined` array item, which `JSON.stringify` would change or drop
 * without a word), at most `INPUT_LIMITS.jsonBytes` of text, nested at most
 * `INPUT_LIMITS.jsonDepth` deep, and without NUL or lone surrogates in any string or key (jsonb
 * refuses `\u0000` with error 22P05 and a lone `\ud800` with 22P02, failing the caller's
 * transaction). Text that merely reads `\u0000` (an escaped backslash, then `u0000`) is fine.
 * Throws a `ConfigError` naming `option`, or the path under it at fault
 * (`events[3].payload.when`); the message shows no part of the value.
 * @internal
 *
 * @example
 * const payloadJson = toJsonText(event.payload, 'events[3].payload');
 */
export function toJsonText(value: unknown, option: string): string {
  const fault = jsonValueFault(value);
  if (fault === undefined) return storableJsonText(value, option);
  // too deep is a bound of storage, reported like the others storableJsonText finds
  if (fault.nested) throw new ConfigError(option, `Expected \`${option}\` to be JSON PostgreSQL can store, but it is ${fault.kind}`);
  throw new ConfigError(option + fault.path, `${option + fault.path}: ${fault.problem}`);
}

/**
 * What is not JSON in a value, by where and why: `undefined` when the value is JSON that comes
 * back as it went in (plain objects, arrays, strings, finite numbers, booleans, null; an object
 * property that is `undefined` is absent either way, so it passes). One walk that allocates
 * nothing until it finds a fault. `path` is relative (`.when`, `.items[2]`, or `` for the value
 * itself); `problem` says what the value is and what to pass instead.
 * @internal
 *
 * @example
 * jsonValueFault({ when: new Date() }); // { path: '.when', kind: 'a Date', problem: 'a Date is not JSON; pass an ISO string (date.toISOString())' }
 */
export function jsonValueFault(value: unknown): JsonFault | undefined {
  const fault = faultAt(value, 0);
  if (fault === undefined) return undefined;
  // a fault of depth is reported at the value itself: its path would be as deep as the nesting
  const path = fault.depth ? '' : fault.segments.reverse().join('');
  const hint = fault.hint === undefined ? '' : `; ${fault.hint}`;
  return { path, kind: fault.kind, hint, nested: fault.depth, problem: fault.depth ? fault.kind : `${fault.kind} is not JSON${hint}` };
}

/** One fault {@link jsonValueFault} found. @internal */
export interface JsonFault {
  /** Where, below the value: `.when`, `.items[2]`, `["a key"]`, or `` for the value itself. */
  readonly path: string;
  /** What is there: `a Date`, `NaN`, `a function` (or the nesting, for a value nested too deep). */
  readonly kind: string;
  /** What to pass instead, after a semicolon (`; pass an ISO string …`), or ``. */
  readonly hint: string;
  /** The whole sentence: what is there, that it is not JSON, and what to pass instead. */
  readonly problem: string;
  /** The fault is the nesting (deeper than `INPUT_LIMITS.jsonDepth`, or a value that refers to itself), at the value itself. */
  readonly nested: boolean;
}

interface WalkFault {
  kind: string;
  hint: string | undefined;
  // path pieces, innermost first: added while the walk unwinds, so a value without a fault costs none
  segments: string[];
  depth: boolean;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function faultAt(value: unknown, depth: number): WalkFault | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : walkFault(String(value), 'pass a finite number or null (JSON would store null)');
    case 'object': {
      if (value === null) return undefined;
      if (depth >= INPUT_LIMITS.jsonDepth) {
        return { kind: `nested deeper than ${INPUT_LIMITS.jsonDepth} levels (or it refers to itself)`, hint: undefined, segments: [], depth: true };
      }
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          // strings, booleans, null and finite numbers inline: most of a payload, without a call
          if (typeof item === 'string' || typeof item === 'boolean' || item === null || (typeof item === 'number' && Number.isFinite(item))) continue;
          const fault = item === undefined ? walkFault('undefined', 'pass null (JSON would store null in its place)') : faultAt(item, depth + 1);
          if (fault !== undefined) {
            fault.segments.push(`[${i}]`);
            return fault;
          }
        }
        return undefined;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) return objectFault(value);
      // for…in allocates no key array; with Object.prototype (or null) as the prototype it
      // yields the own enumerable keys JSON.stringify writes (unless something made a key of
      // Object.prototype itself enumerable, which breaks far more than this)
      for (const key in value) {
        const item = (value as Record<string, unknown>)[key];
        // an absent property reads the same as an undefined one; the rest as for arrays
        if (item === undefined || typeof item === 'string' || typeof item === 'boolean' || item === null || (typeof item === 'number' && Number.isFinite(item))) continue;
        const fault = faultAt(item, depth + 1);
        if (fault !== undefined) {
          fault.segments.push(IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key)}]`);
          return fault;
        }
      }
      return undefined;
    }
    case 'undefined':
      return walkFault('undefined', 'pass null, or leave the field out');
    case 'bigint':
      return walkFault('a bigint', 'pass a string (or a number within Number.MAX_SAFE_INTEGER)');
    case 'function':
      return walkFault('a function', 'pass data only');
    default:
      return walkFault(`a ${typeof value}`, undefined);
  }
}

function walkFault(kind: string, hint: string | undefined): WalkFault {
  return { kind, hint, segments: [], depth: false };
}

// an object that is neither a plain object nor an array: JSON.stringify would turn it into
// something else (a Date into a string, a Map or a Set into {}, a Buffer into {type, data})
function objectFault(value: object): WalkFault {
  if (value instanceof Date) return walkFault('a Date', 'pass an ISO string (date.toISOString()) or epoch milliseconds');
  if (value instanceof Map) return walkFault('a Map', 'pass a plain object (Object.fromEntries(map)) or an array of entries (JSON would store {})');
  if (value instanceof Set) return walkFault('a Set', 'pass an array ([...set]) (JSON would store {})');
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return walkFault('binary data', 'pass a base64 string');
  if (value instanceof RegExp) return walkFault('a RegExp', 'pass its source as a string (JSON would store {})');
  if (value instanceof Error) return walkFault('an Error', 'pass its message as a string (JSON would store {})');
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  const kind = typeof name === 'string' && name !== '' && name !== 'Object' ? `a ${name} instance` : 'an object with a prototype';
  return walkFault(kind, 'pass a plain object or an array (JSON keeps only own fields, without methods or class)');
}

/**
 * {@link toJsonText} without the walk, for a value {@link jsonValueFault} has passed: the text,
 * within the size and depth bounds, with nothing jsonb refuses. @internal
 */
export function storableJsonText(value: unknown, option: string): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    // V8 serialises recursively: a value nested thousands deep overflows the stack here
    const overflow = error instanceof RangeError && /call stack/i.test(error.message);
    const reason = overflow ? `it is nested deeper than ${INPUT_LIMITS.jsonDepth} levels` : (error as Error).message;
    throw new ConfigError(option, `Expected \`${option}\` to be JSON-serialisable: ${reason}`);
  }
  if (json === undefined) {
    throw new ConfigError(option, `Expected \`${option}\` to be JSON-serialisable, got ${typeof value}`);
  }
  // the escapes scanned for are ASCII, so the text's length in bytes is all that is left unknown;
  // a UTF-16 unit is at most 3 bytes of UTF-8, so short text needs no count
  if (json.length * 3 > INPUT_LIMITS.jsonBytes) {
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > INPUT_LIMITS.jsonBytes) {
      throw new ConfigError(option, `Expected \`${option}\` to be at most ${INPUT_LIMITS.jsonBytes} bytes of JSON, got ${bytes}`);
    }
  }
  const fault = jsonFault(json);
  if (fault) throw new ConfigError(option, `Expected \`${option}\` to be JSON PostgreSQL can store, but it ${fault}`);
  return json;
}

/**
 * Why jsonb cannot store the output of `JSON.stringify`, or `undefined`. One linear pass:
 * outside strings it counts nesting; inside, it reads each escape whole, so `\\u0000` (an
 * escaped backslash, then text) is never taken for `\u0000`. `JSON.stringify` escapes a
 * surrogate only when it is lone, so every `\ud800`–`\udfff` escape is one.
 * @internal
 */
export function jsonFault(json: string): string | undefined {
  const end = json.length;
  // the common payload, checked without the scan (half a microsecond for 130 characters): no
  // backslash means no escape to refuse, and nesting deeper than the limit takes more than
  // twice the limit's characters (each level opens and closes)
  if (end <= 2 * INPUT_LIMITS.jsonDepth + 1 && json.indexOf('\\') < 0) return undefined;
  let depth = 0;
  // the next quote and the next backslash, each found once and reused until passed: strings
  // are skipped by indexOf rather than character by character, and no stretch is searched twice
  let quote = -1;
  let backslash = -1;
  for (let i = 0; i < end; i++) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      for (;;) {
        if (quote <= i) quote = indexOrEnd(json, '"', i + 1);
        if (backslash <= i) backslash = indexOrEnd(json, '\\', i + 1);
        // (a string left open, which JSON.stringify never writes, ends the text)
        if (quote < backslash || backslash === end) {
          i = quote;
          break;
        }
        const fault = escapeFault(json, backslash);
        if (fault) return fault;
        i = backslash + (json.charCodeAt(backslash + 1) === LETTER_U ? 5 : 1);
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > INPUT_LIMITS.jsonDepth) return `is nested deeper than ${INPUT_LIMITS.jsonDepth} levels`;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return undefined;
}

const QUOTE = 0x22;
const LETTER_U = 0x75;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const LONE_SURROGATE_ESCAPE = /^d[89a-f]/i;

function indexOrEnd(text: string, search: string, from: number): number {
  const at = text.indexOf(search, from);
  return at < 0 ? text.length : at;
}

// what is wrong with the escape starting at `at` (a backslash), if anything
function escapeFault(json: string, at: number): string | undefined {
  if (json.charCodeAt(at + 1) !== LETTER_U) return undefined;
  const hex = json.slice(at + 2, at + 6);
  if (hex === '0000') return 'contains a NUL character (\\u0000)';
  if (LONE_SURROGATE_ESCAPE.test(hex)) return `contains a lone UTF-16 surrogate (\\u${hex.toLowerCase()})`;
  return undefined;
}
