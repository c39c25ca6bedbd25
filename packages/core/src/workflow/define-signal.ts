import { ConfigError } from '../errors.js';
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
 * Defines a signal a workflow can wait for.
 *
 * @example
 * const approved = defineSignal<{ by: string }>('approved');
 */
export function defineSignal<S = undefined>(name: string): SignalDefinition<S> {
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
