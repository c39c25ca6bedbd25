import { ConfigError } from '../errors.js';
import type { JsonTypeCheck } from '../input/json-type.js';
import { checkName } from '../input/text.js';

declare const payloadType: unique symbol;

/**
 * A named signal whose payload type both ends share: `ctx.waitForSignal(approved)` in the
 * workflow, `sendSignal(executor, taskId, approved, payload)` anywhere else.
 */
export interface SignalDefinition<S> {
  readonly name: string;
  /** Carries the payload type; never set. */
  readonly [payloadType]?: S;
}

/**
 * Defines a signal a workflow can wait for. Its payload is stored as JSON, so `S` must be JSON
 * as a task's payload type must (packages/core/README.md, "Payloads are JSON"): with a `Date`,
 * a `Map`… in it the call does not compile, and the error names the field
 * (`'the signal payload type is not JSON': { when: "a Date is not JSON: …" }`).
 *
 * @example
 * const approved = defineSignal<{ by: string }>('approved');
 */
// the check rides on `name`'s type (`string & unknown` is `string` when `S` is JSON); NoInfer: `S`
// is never inferred from the name, so `defineSignal('x')` keeps its default (no payload)
export function defineSignal<S = undefined>(name: string & NoInfer<JsonTypeCheck<S, 'signal payload'>>): SignalDefinition<S> {
  checkName(name, 'name', 'the signal name');
  return Object.freeze({ name });
}

/** Checks that `value` was made by {@link defineSignal}. */
export function checkSignal(value: unknown, option: string): SignalDefinition<unknown> {
  if (typeof (value as { name?: unknown } | null)?.name !== 'string') {
    throw new ConfigError(option, `Expected \`${option}\` to be made by defineSignal()`);
  }
  return value as SignalDefinition<unknown>;
}
