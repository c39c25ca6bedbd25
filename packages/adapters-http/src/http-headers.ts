import { ConfigError } from '@leasehold/core';
import { checkHeaders } from '@leasehold/core/internal';

/**
 * Why `fetch` would refuse this header, or `undefined`. Node's own `Headers` is the rule (a
 * token name; a Latin-1 value without CR, LF or NUL); its error quotes the value, so only the
 * verdict is kept.
 * @internal
 */
export function httpHeaderFault(name: string, value: string): string | undefined {
  try {
    new Headers().set(name, value);
    return undefined;
  } catch {
    try {
      new Headers().set(name, '');
    } catch {
      return 'is not a valid HTTP header name';
    }
    return 'has a value HTTP cannot carry (CR, LF, NUL or a character above U+00FF; not shown)';
  }
}

/**
 * Checks the `headers` option of a publisher once, at construction: core's header rules (the
 * ones the outbox applies to an event's headers) and then HTTP's. A `ConfigError` names the
 * header (`headers.x-api-key`) and never shows its value.
 * @internal
 */
export function checkHttpHeaders(value: unknown, option: string): Readonly<Record<string, string>> {
  const headers = checkHeaders(value, option);
  for (const [name, v] of Object.entries(headers)) {
    const fault = httpHeaderFault(name, v);
    if (fault) throw new ConfigError(`${option}.${name}`, `Expected \`${option}.${name}\` to be a valid HTTP header, but it ${fault}`);
  }
  return Object.freeze(headers);
}
