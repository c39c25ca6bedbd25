/** An integer as PostgreSQL's `bigint` input takes it, with nothing an array literal could misread. */
const BIGINT_TEXT = /^-?\d{1,19}$/;

/**
 * `values` as the text of a `bigint[]` literal (`{1,2,3}`), for a statement that casts its
 * parameter `::bigint[]`; or `values` themselves when one is not plainly an integer, so that pg
 * sends them and PostgreSQL rejects them as it would have. pg turns a JS array into that text
 * element by element, quoting each and concatenating (some 0.4 KB of garbage per element); a
 * fenced write of a thousand tasks sends two such arrays.
 */
export function bigintArray(values: readonly (string | number)[]): string | readonly (string | number)[] {
  for (const v of values) {
    if (typeof v === 'number' ? !Number.isSafeInteger(v) : !BIGINT_TEXT.test(v)) return values;
  }
  return `{${values.join(',')}}`;
}
