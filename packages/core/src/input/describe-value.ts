/**
 * A bad value as error messages show it: numbers and short strings as they are, long strings
 * cut, objects by kind. Checks of text that may be secret (keys, header values) never call this.
 * @internal
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'bigint') return `${value}n`;
  return String(value);
}
