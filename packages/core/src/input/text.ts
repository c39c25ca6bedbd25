import { ConfigError } from '../leasehold-error.js';
import { describeValue } from './describe-value.js';
import { INPUT_LIMITS } from './limits.js';

/** What a string must be to go into a text column: {@link checkText}. */
export interface TextRule {
  /** Most UTF-8 bytes. */
  readonly maxBytes: number;
  /** Whether `''` is allowed. @defaultValue false */
  readonly allowEmpty?: boolean;
  /** How the message refers to the value. @defaultValue the option in backticks */
  readonly subject?: string;
}

// without the u flag these match UTF-16 code units: a high surrogate not followed by a low one,
// or a low one not preceded by a high one
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why PostgreSQL cannot store `text` as it is, or `undefined` when it can. Text columns refuse
 * NUL (error 22021), and the driver encodes a lone UTF-16 surrogate as U+FFFD: silently, so two
 * different keys could become one.
 * @internal
 */
export function textFault(text: string): string | undefined {
  const nul = text.indexOf('\u0000');
  if (nul >= 0) return `contains a NUL character (U+0000) at index ${nul}`;
  const lone = LONE_SURROGATE.exec(text);
  if (lone) return `contains a lone UTF-16 surrogate at index ${lone.index}`;
  return undefined;
}

/**
 * Checks a string bound for a text column: a string, non-empty unless allowed, without NUL or
 * lone surrogates, within `maxBytes` of UTF-8; or throws a `ConfigError` naming `option`. The
 * message never shows the text, which may be a key or a credential.
 * @internal
 */
export function checkText(value: unknown, option: string, rule: TextRule): string {
  const subject = rule.subject ?? `\`${option}\``;
  if (typeof value !== 'string') throw new ConfigError(option, `Expected ${subject} to be a string, got ${describeValue(value)}`);
  if (value.length === 0 && !rule.allowEmpty) throw new ConfigError(option, `Expected ${subject} to be a non-empty string`);
  const fault = textFault(value);
  if (fault) throw new ConfigError(option, `Expected ${subject} to be text PostgreSQL can store, but it ${fault}`);
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > rule.maxBytes) {
    throw new ConfigError(option, `Expected ${subject} to be at most ${rule.maxBytes} bytes of UTF-8, got ${bytes}`);
  }
  return value;
}

/**
 * A name: task name, owner, aggregate type, event type, header name. Non-empty storable text of
 * at most `INPUT_LIMITS.nameBytes`.
 * @internal
 */
export function checkName(value: unknown, option: string, subject?: string): string {
  return checkText(value, option, { maxBytes: INPUT_LIMITS.nameBytes, subject });
}

/**
 * A key: group key, dedup key, aggregate id, inbox message id. Non-empty storable text of at
 * most `INPUT_LIMITS.keyBytes`, since keys are indexed.
 * @internal
 */
export function checkKey(value: unknown, option: string): string {
  return checkText(value, option, { maxBytes: INPUT_LIMITS.keyBytes });
}
