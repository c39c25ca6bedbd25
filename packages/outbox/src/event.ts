import { ConfigError, INTEGER_RANGES } from '@leasehold/core';
import { checkHeaders, checkInteger, checkKey, checkName, optionKeys, toJsonText, unknownKey, unknownOption } from '@leasehold/core/internal';

/**
 * A domain event to record in the outbox, in the same transaction as the business change it
 * describes.
 */
export interface OutboxEvent<Payload = unknown> {
  /** Kind of aggregate, e.g. `order`. A name (`INPUT_LIMITS.nameBytes`), without `:`. */
  aggregateType: string;
  /**
   * The aggregate's id; becomes the message `key`. Integers are stored as text. A key
   * (`INPUT_LIMITS.keyBytes`).
   */
  aggregateId: string | number | bigint;
  /** Kind of event, e.g. `OrderPaid`. A name (`INPUT_LIMITS.nameBytes`). */
  eventType: string;
  /**
   * Any JSON-serialisable value within `INPUT_LIMITS.jsonBytes` and `INPUT_LIMITS.jsonDepth`,
   * with no NUL or lone surrogate in its strings.
   */
  payload: Payload;
  /**
   * String headers handed to the publisher: at most `INPUT_LIMITS.headerCount`, names are names,
   * values at most `INPUT_LIMITS.headerValueBytes`. @defaultValue {}
   */
  headers?: Readonly<Record<string, string>>;
  /** Delivery attempts before the message goes dead; overrides the outbox's `maxAttempts`. */
  maxAttempts?: number;
}

/** An event after {@link checkEvent}: every field valid and ready for the insert. @internal */
export interface CheckedEvent {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  readonly payloadJson: string;
  readonly headersJson: string;
  readonly maxAttempts: number | null;
}

/**
 * Checks one event with core's input checks, or throws a `ConfigError` whose `option` names the
 * field (`event.payload`, `events[2].aggregateId`, `events[3].headers.x-tenant-token`). Nothing
 * that passes can fail the insert, so a bad event never aborts the caller's transaction.
 * @internal
 */
export function checkEvent(event: unknown, at = 'event'): CheckedEvent {
  if (typeof event !== 'object' || event === null) {
    throw new ConfigError(at, `Expected \`${at}\` to be an object, got ${typeof event === 'object' ? 'null' : typeof event}`);
  }
  const unknown = unknownKey(event, EVENT_FIELDS);
  if (unknown !== undefined) throw unknownOption(unknown, EVENT_FIELDS, `${at}.`);
  const e = event as Record<string, unknown>;
  const aggregateType = checkName(e.aggregateType, `${at}.aggregateType`);
  // the group key is 'type:id'; a ':' in the type would let two aggregates share one key
  if (aggregateType.includes(':')) {
    throw new ConfigError(`${at}.aggregateType`, `Expected \`${at}.aggregateType\` not to contain ':'`);
  }
  return {
    aggregateType,
    aggregateId: checkKey(idText(e.aggregateId), `${at}.aggregateId`),
    eventType: checkName(e.eventType, `${at}.eventType`),
    payloadJson: toJsonText(e.payload, `${at}.payload`),
    headersJson: JSON.stringify(checkHeaders(e.headers ?? {}, `${at}.headers`)),
    maxAttempts: e.maxAttempts === undefined ? null : checkMaxAttempts(e.maxAttempts, `${at}.maxAttempts`),
  };
}

const EVENT_FIELDS = optionKeys<OutboxEvent>()('an outbox event', ['aggregateType', 'aggregateId', 'eventType', 'payload', 'headers', 'maxAttempts']);

/** Checks a `maxAttempts` setting (core's bounds for it). @internal */
export function checkMaxAttempts(value: unknown, option: string): number {
  return checkInteger(value, option, INTEGER_RANGES.maxAttempts);
}

function idText(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return value;
}
