import { ConfigError } from '../errors.js';
import type { JsonTypeCheck } from '../input/json-type.js';
import { checkName } from '../input/text.js';

declare const valueType: unique symbol;

/**
 * A named progress event whose value type both ends share: `ctx.setEvent(status, value)` in the
 * workflow, `getEvent(pool, task, status)` anywhere else.
 */
export interface EventDefinition<T> {
  readonly key: string;
  /** Carries the value type; never set. */
  readonly [valueType]?: T;
}

/**
 * Defines a progress event a workflow can set (`ctx.setEvent`) and anyone can read
 * (`getEvent`). Its value is stored as JSON, so `T` must be JSON as a signal's payload must: with
 * a `Date`, a `Map`… in it the call does not compile, and the error names the field.
 *
 * @example
 * const payment = defineEvent<{ stage: 'captured' | 'approved'; amount: number }>('payment');
 */
export function defineEvent<T>(key: string & NoInfer<JsonTypeCheck<T, 'event value'>>): EventDefinition<T> {
  checkName(key, 'key', 'the event key');
  return Object.freeze({ key });
}

/** The key of an event given as a name or made by {@link defineEvent}, checked like a step name. @internal */
export function eventKey(event: unknown, option: string): string {
  if (typeof event === 'string') return checkName(event, option, 'the event key');
  if (typeof (event as { key?: unknown } | null)?.key === 'string') return checkName((event as { key: string }).key, option, 'the event key');
  throw new ConfigError(option, `Expected \`${option}\` to be an event key (a string) or made by defineEvent()`);
}
