import { ConfigError } from '../leasehold-error.js';
import { INPUT_LIMITS } from './limits.js';

/**
 * Serialises a value bound for a jsonb column and checks it once, where it enters: JSON-
 * serialisable, at most `INPUT_LIMITS.jsonBytes` of text, nested at most
 * `INPUT_LIMITS.jsonDepth` deep, and without NUL or lone surrogates in any string or key (jsonb
 * refuses `\u0000` with error 22P05 and a lone `\ud800` with 22P02, failing the caller's
 * transaction). Text that merely reads `\u0000` (an escaped backslash, then `u0000`) is fine.
 * Throws a `ConfigError` naming `option`; the message shows no part of the value.
 * @internal
 *
 * @example
 * const payloadJson = toJsonText(event.payload, 'events[3].payload');
 */
export function toJsonText(value: unknown, option: string): string {
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
