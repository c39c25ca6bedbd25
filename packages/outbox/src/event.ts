import { ConfigError } from '@leasehold/core';

/**
 * A domain event to record in the outbox, in the same transaction as the business change it
 * describes.
 */
export interface OutboxEvent<Payload = unknown> {
  /** Kind of aggregate, e.g. `order`. Non-empty, at most 200 characters, no `:`. */
  aggregateType: string;
  /** The aggregate's id; becomes the message `key`. Numbers are stored as text. */
  aggregateId: string | number | bigint;
  /** Kind of event, e.g. `OrderPaid`. Non-empty, at most 200 characters. */
  eventType: string;
  /** Any JSON-serialisable value. */
  payload: Payload;
  /** String headers handed to the publisher. @defaultValue {} */
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

const MAX_TYPE_LENGTH = 200;
const MAX_ID_LENGTH = 1_000;

/**
 * Checks one event, or throws a `ConfigError` whose `option` names the field (`event.payload`,
 * `events[2].aggregateId`). @internal
 */
export function checkEvent(event: unknown, at = 'event'): CheckedEvent {
  if (typeof event !== 'object' || event === null) {
    throw new ConfigError(at, `Expected \`${at}\` to be an object, got ${typeof event === 'object' ? 'null' : typeof event}`);
  }
  const e = event as Record<string, unknown>;
  const aggregateType = checkText(e.aggregateType, `${at}.aggregateType`, MAX_TYPE_LENGTH);
  // the group key is 'type:id'; a ':' in the type would let two aggregates share one key
  if (aggregateType.includes(':')) {
    throw new ConfigError(`${at}.aggregateType`, `Expected \`${at}.aggregateType\` not to contain ':', got ${JSON.stringify(aggregateType)}`);
  }
  return {
    aggregateType,
    aggregateId: checkText(idText(e.aggregateId), `${at}.aggregateId`, MAX_ID_LENGTH),
    eventType: checkText(e.eventType, `${at}.eventType`, MAX_TYPE_LENGTH),
    payloadJson: toJson(e.payload, `${at}.payload`),
    headersJson: JSON.stringify(checkHeaders(e.headers ?? {}, `${at}.headers`)),
    maxAttempts: e.maxAttempts === undefined ? null : checkMaxAttempts(e.maxAttempts, `${at}.maxAttempts`),
  };
}

/** Checks a `maxAttempts` setting. @internal */
export function checkMaxAttempts(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000) {
    throw new ConfigError(option, `Expected \`${option}\` to be an integer between 1 and 1000, got ${String(value)}`);
  }
  return value;
}

function idText(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return value;
}

function checkText(value: unknown, option: string, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new ConfigError(option, `Expected \`${option}\` to be a non-empty string of at most ${max} characters, got ${describe(value)}`);
  }
  // PostgreSQL text cannot hold NUL
  if (value.includes('\u0000')) {
    throw new ConfigError(option, `Expected \`${option}\` not to contain NUL characters`);
  }
  return value;
}

function toJson(value: unknown, option: string): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw new ConfigError(option, `Expected \`${option}\` to be JSON-serialisable: ${(error as Error).message}`);
  }
  if (json === undefined) {
    throw new ConfigError(option, `Expected \`${option}\` to be JSON-serialisable, got ${typeof value}`);
  }
  // jsonb rejects \u0000; refuse here, naming the field, rather than fail the transaction
  if (json.includes('\\u0000')) {
    throw new ConfigError(option, `Expected \`${option}\` not to contain NUL characters (jsonb cannot store them)`);
  }
  return json;
}

function checkHeaders(value: unknown, option: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(option, `Expected \`${option}\` to be an object of strings, got ${describe(value)}`);
  }
  const headers: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) {
    if (typeof v !== 'string') {
      throw new ConfigError(option, `Expected \`${option}.${name}\` to be a string, got ${describe(v)}`);
    }
    headers[name] = v;
  }
  return headers;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (Array.isArray(value)) return 'an array';
  return value === null ? 'null' : typeof value;
}
