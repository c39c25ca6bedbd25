import { PermanentError } from '../errors.js';
import { toJsonText } from '../input/json.js';

/**
 * A value recorded as JSON (a step's or a handler's result) as JSON text, or null for
 * `undefined` ("returned nothing"). Refuses, with a `PermanentError` naming `what` and the path,
 * anything that would not come back as it went in: functions, symbols, bigints, non-finite
 * numbers, `undefined` inside arrays, and objects other than plain objects and arrays (a `Date`
 * would come back a string, a `Map` an empty object). Retrying cannot change the value, so the
 * task goes dead with the message, and nothing is recorded.
 */
export function recordedJson(value: unknown, what: string): string | null {
  if (value === undefined) return null;
  const fault = jsonFaultAt(value, '', 0);
  if (fault !== undefined) throw new PermanentError(`${what} is not JSON-serialisable: ${fault}`);
  try {
    return toJsonText(value, what);
  } catch (error) {
    throw new PermanentError(`${what} cannot be recorded: ${(error as Error).message}`, { cause: error });
  }
}

function jsonFaultAt(value: unknown, path: string, depth: number): string | undefined {
  if (depth > 200) return `${path || 'the value'} is nested deeper than 200 levels`;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `${path || 'the value'} is ${value}`;
    case 'object': {
      if (value === null) return undefined;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (value[i] === undefined) return `${path}[${i}] is undefined`;
          const fault = jsonFaultAt(value[i], `${path}[${i}]`, depth + 1);
          if (fault !== undefined) return fault;
        }
        return undefined;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) {
        const kind = (value as { constructor?: { name?: string } }).constructor?.name ?? 'object';
        return `${path || 'the value'} is a ${kind}, not a plain object`;
      }
      for (const [key, item] of Object.entries(value)) {
        if (item === undefined) continue; // an absent property reads the same
        const fault = jsonFaultAt(item, `${path}.${key}`, depth + 1);
        if (fault !== undefined) return fault;
      }
      return undefined;
    }
    default:
      return `${path || 'the value'} is a ${typeof value}`;
  }
}
