import { ConfigError, type BackoffPolicy, type Duration } from '@leasehold/core';
import { checkOptionKeys, optionKeys, parseDuration } from '@leasehold/core/internal';
import type { OutboxMessage } from '@leasehold/outbox';
import type { ConfirmChannel, Options, SocketOptions } from 'amqplib';
import { defaultRoutingKey } from './routing-key.js';

/** What an AMQP publish reports once the broker confirmed it. */
export interface AmqpPublished {
  readonly message: OutboxMessage;
  readonly exchange: string;
  readonly routingKey: string;
}

/** Options of {@link amqpPublisher}. */
export interface AmqpPublisherOptions {
  /** The broker, e.g. `'amqp://guest:guest@127.0.0.1:5672'`, or amqplib's connect object. */
  url: string | Options.Connect;
  /** amqplib socket options (TLS, `clientProperties`, …); `timeout` is `connectTimeout`. */
  socketOptions?: SocketOptions;
  /** The exchange to publish to; `''` is the default exchange (routing key = queue name). */
  exchange: string;
  /** The routing key of a message. @defaultValue `<aggregateType>.<eventType>` */
  routingKey?: (message: OutboxMessage) => string;
  /**
   * The `message-id` property, and the id the consumer's inbox records. Prefix it when several
   * outboxes publish to one broker: their ids are only unique per outbox table.
   * @defaultValue the outbox id
   */
  messageId?: (message: OutboxMessage) => string;
  /** The body, serialised as JSON. @defaultValue the payload */
  body?: (message: OutboxMessage) => unknown;
  /**
   * Declares your topology on every new channel (`assertExchange`, `assertQueue` with
   * `x-queue-type: quorum`, `bindQueue`), before the first publish on it.
   */
  setup?: (channel: ConfirmChannel) => Promise<void>;
  /**
   * Publish with `mandatory`, so a message no queue is bound for comes back (`basic.return`)
   * and goes dead instead of being dropped by the broker. @defaultValue true
   */
  mandatory?: boolean;
  /** The `app-id` property. @defaultValue none */
  appId?: string;
  /** How long to wait for the broker's confirm. @defaultValue '4s' */
  timeout?: Duration;
  /** Longest wait for a connection and its channel. @defaultValue '5s' */
  connectTimeout?: Duration;
  /** Full-jitter backoff between connection attempts after a failure. @defaultValue base 100 ms, cap 5 s */
  reconnect?: { base?: Duration; cap?: Duration };
  /** Called after each confirmed publish; must not throw. */
  onPublished?: (published: AmqpPublished) => void;
}

/** The options after checking, durations in ms. @internal */
export interface NormalizedAmqpOptions {
  readonly url: string | Options.Connect;
  readonly socketOptions: SocketOptions;
  readonly exchange: string;
  readonly routingKey: (message: OutboxMessage) => string;
  readonly messageId: (message: OutboxMessage) => string;
  readonly body: (message: OutboxMessage) => unknown;
  readonly setup: ((channel: ConfirmChannel) => Promise<void>) | undefined;
  readonly mandatory: boolean;
  readonly appId: string | undefined;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly reconnect: BackoffPolicy;
  readonly onPublished: ((published: AmqpPublished) => void) | undefined;
}

const AMQP_PUBLISHER_OPTIONS = optionKeys<AmqpPublisherOptions>()('amqpPublisher', [
  'url', 'socketOptions', 'exchange', 'routingKey', 'messageId', 'body', 'setup', 'mandatory', 'appId', 'timeout', 'connectTimeout', 'reconnect', 'onPublished',
]);
const RECONNECT_OPTIONS = optionKeys<NonNullable<AmqpPublisherOptions['reconnect']>>()('amqpPublisher', ['base', 'cap']);

/** Checks and freezes the options; a mistake is a `ConfigError` naming the option. @internal */
export function normalizeAmqpOptions(options: AmqpPublisherOptions): NormalizedAmqpOptions {
  if (typeof options !== 'object' || options === null) throw new ConfigError('options', 'Expected an options object');
  checkOptionKeys(options, AMQP_PUBLISHER_OPTIONS);
  checkOptionKeys(options.reconnect, RECONNECT_OPTIONS, 'reconnect.');
  const { url } = options;
  if (!(typeof url === 'string' && /^amqps?:\/\//.test(url)) && !(typeof url === 'object' && url !== null)) {
    throw new ConfigError('url', 'Expected `url` to be an amqp:// or amqps:// URL, or an amqplib connect object');
  }
  if (typeof options.exchange !== 'string' || Buffer.byteLength(options.exchange) > 255) {
    throw new ConfigError('exchange', "Expected `exchange` to be an exchange name ('' for the default exchange)");
  }
  for (const name of ['routingKey', 'messageId', 'body', 'setup', 'onPublished'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new ConfigError(name, `Expected \`${name}\` to be a function`);
    }
  }
  if (options.mandatory !== undefined && typeof options.mandatory !== 'boolean') {
    throw new ConfigError('mandatory', 'Expected `mandatory` to be a boolean');
  }
  const reconnect = {
    baseMs: parseDuration(options.reconnect?.base ?? 100, 'reconnect.base'),
    capMs: parseDuration(options.reconnect?.cap ?? '5s', 'reconnect.cap'),
  };
  if (reconnect.capMs < reconnect.baseMs) throw new ConfigError('reconnect.cap', 'Expected `reconnect.cap` to be at least `reconnect.base`');
  return Object.freeze({
    url,
    socketOptions: Object.freeze({ ...(options.socketOptions ?? {}) }),
    exchange: options.exchange,
    routingKey: options.routingKey ?? defaultRoutingKey,
    messageId: options.messageId ?? ((m: OutboxMessage) => m.id),
    body: options.body ?? ((m: OutboxMessage) => m.payload),
    setup: options.setup,
    mandatory: options.mandatory ?? true,
    appId: options.appId,
    timeoutMs: parseDuration(options.timeout ?? '4s', 'timeout'),
    connectTimeoutMs: parseDuration(options.connectTimeout ?? '5s', 'connectTimeout'),
    reconnect: Object.freeze(reconnect),
    onPublished: options.onPublished,
  });
}
