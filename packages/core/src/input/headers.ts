import { ConfigError } from '../leasehold-error.js';
import { describeValue } from './describe-value.js';
import { INPUT_LIMITS } from './limits.js';
import { checkName, checkText } from './text.js';

/**
 * Checks a record of string headers bound for a jsonb column: at most
 * `INPUT_LIMITS.headerCount` of them, each name a {@link checkName} name, each value storable
 * text of at most `INPUT_LIMITS.headerValueBytes` (empty allowed). A `ConfigError` names the
 * header: `events[3].headers.x-tenant-token`; no message shows a value.
 * @internal
 */
export function checkHeaders(value: unknown, option: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(option, `Expected \`${option}\` to be an object of strings, got ${describeValue(value)}`);
  }
  const entries = Object.entries(value);
  if (entries.length > INPUT_LIMITS.headerCount) {
    throw new ConfigError(option, `Expected \`${option}\` to hold at most ${INPUT_LIMITS.headerCount} headers, got ${entries.length}`);
  }
  // fromEntries defines own properties, so even a header named __proto__ is kept as a header
  return Object.fromEntries(
    entries.map(([name, v], i) => {
      // a name joins the path only once it is known to be printable
      checkName(name, option, `the name of header ${i + 1} in \`${option}\``);
      return [name, checkText(v, `${option}.${name}`, { maxBytes: INPUT_LIMITS.headerValueBytes, allowEmpty: true })];
    }),
  );
}
