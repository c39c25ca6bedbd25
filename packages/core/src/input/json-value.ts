import { PermanentError } from '../errors.js';
import { jsonValueFault, storableJsonText } from './json.js';

/**
 * A value recorded as JSON (a step's or a handler's result, a checkpoint) as JSON text, or null
 * for `undefined` ("returned nothing"). Refuses, with a `PermanentError` naming `what` and the
 * path, anything that would not come back as it went in: the rule of {@link jsonValueFault}, the
 * one every payload is checked with where it enters. Retrying cannot change the value, so the
 * task goes dead with the message, and nothing is recorded.
 * @internal
 */
export function recordedJson(value: unknown, what: string): string | null {
  if (value === undefined) return null;
  const fault = jsonValueFault(value);
  if (fault !== undefined) {
    throw new PermanentError(`${what} is not JSON-serialisable: ${fault.path || 'the value'} is ${fault.kind}${fault.hint}`);
  }
  try {
    return storableJsonText(value, what);
  } catch (error) {
    throw new PermanentError(`${what} cannot be recorded: ${(error as Error).message}`, { cause: error });
  }
}
