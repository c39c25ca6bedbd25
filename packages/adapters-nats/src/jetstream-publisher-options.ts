import { ConfigError, type Duration } from '@leasehold/core';
import { checkOptionKeys, optionKeys, parseDuration } from '@leasehold/core/internal';
import type { OutboxMessage } from '@leasehold/outbox';
import type { NatsConnection, NodeConnectionOptions } from '@nats-io/transport-node';
import { defaultSubject } from './subject.js';

/** What a JetStream publish reports once the stream acknowledged it. */
export interface JetStreamPublished {
  readonly message: OutboxMessage;
  readonly subject: string;
  /** The stream that stored it. */
  readonly stream: string;
  /** Its sequence in the stream (the first copy's, for a duplicate). */
  readonly seq: number;
  /** True when the stream already held this `Nats-Msg-Id` and dropped the copy. */
  readonly duplicate: boolean;
}

/** Options of {@link jetStreamPublisher}. Give `servers` (it connects) or `connection` (yours). */
export interface JetStreamPublisherOptions {
  /**
   * NATS servers to connect to, e.g. `'nats://127.0.0.1:4222'` or all members of a cluster.
   * The publisher opens one connection on first use, shares it between publishes, reconnects
   * forever (`maxReconnectAttempts: -1`) and closes it in `close()`.
   */
  servers?: string | readonly string[];
  /** More options for that connection (`name`, `user`, `pass`, `token`, `tls`, …). */
  connectOptions?: Omit<NodeConnectionOptions, 'servers'>;
  /** A connection you opened instead; `close()` leaves it open. */
  connection?: NatsConnection;
  /** The subject of a message. @defaultValue `<aggregateType>.<eventType>` */
  subject?: (message: OutboxMessage) => string;
  /**
   * The `Nats-Msg-Id`, and the id the consumer's inbox records. Prefix it when several
   * outboxes publish into one stream: their ids are only unique per outbox table.
   * @defaultValue the outbox id
   */
  messageId?: (message: OutboxMessage) => string;
  /** The body, serialised as JSON. @defaultValue the payload */
  body?: (message: OutboxMessage) => unknown;
  /**
   * Sent as `Nats-Expected-Stream`: the server refuses (permanently) a message that another
   * stream would capture. @defaultValue none
   */
  expectStream?: string;
  /**
   * How long to wait for the PubAck, in ms or as an `ms` string. Keep it below the
   * dispatcher's `publishTimeout`, so a slow stream is reported as such. @defaultValue '4s'
   */
  timeout?: Duration;
  /** Longest wait for the first connection of a publish. @defaultValue '5s' */
  connectTimeout?: Duration;
  /**
   * A subject no stream captures (JetStream answers, but no stream's subjects match):
   * `'retryable'` retries with backoff until `maxAttempts`, `'permanent'` sends the message
   * dead at once. @defaultValue 'retryable'
   */
  streamMissing?: 'retryable' | 'permanent';
  /** Called after each acknowledged publish (duplicates included); must not throw. */
  onPublished?: (published: JetStreamPublished) => void;
}

/** The options after checking, durations in ms. @internal */
export interface NormalizedJetStreamOptions {
  readonly servers: readonly string[] | undefined;
  readonly connectOptions: Omit<NodeConnectionOptions, 'servers'>;
  readonly connection: NatsConnection | undefined;
  readonly subject: (message: OutboxMessage) => string;
  readonly messageId: (message: OutboxMessage) => string;
  readonly body: (message: OutboxMessage) => unknown;
  readonly expectStream: string | undefined;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly streamMissing: 'retryable' | 'permanent';
  readonly onPublished: ((published: JetStreamPublished) => void) | undefined;
}

const JETSTREAM_PUBLISHER_OPTIONS = optionKeys<JetStreamPublisherOptions>()('jetStreamPublisher', [
  'servers', 'connectOptions', 'connection', 'subject', 'messageId', 'body', 'expectStream', 'timeout', 'connectTimeout', 'streamMissing', 'onPublished',
]);

/** Checks and freezes the options; a mistake is a `ConfigError` naming the option. @internal */
export function normalizeJetStreamOptions(options: JetStreamPublisherOptions): NormalizedJetStreamOptions {
  if (typeof options !== 'object' || options === null) throw new ConfigError('options', 'Expected an options object');
  checkOptionKeys(options, JETSTREAM_PUBLISHER_OPTIONS);
  const servers = options.servers === undefined ? undefined : checkServers(options.servers);
  if ((servers === undefined) === (options.connection === undefined)) {
    throw new ConfigError('servers', 'Give either `servers` (the publisher connects) or `connection` (yours), not both or neither');
  }
  if (options.connection !== undefined && typeof options.connection.request !== 'function') {
    throw new ConfigError('connection', 'Expected `connection` to be a NatsConnection from @nats-io/transport-node');
  }
  for (const name of ['subject', 'messageId', 'body', 'onPublished'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new ConfigError(name, `Expected \`${name}\` to be a function`);
    }
  }
  const streamMissing = options.streamMissing ?? 'retryable';
  if (streamMissing !== 'retryable' && streamMissing !== 'permanent') {
    throw new ConfigError('streamMissing', "Expected `streamMissing` to be 'retryable' or 'permanent'");
  }
  if (options.expectStream !== undefined && (typeof options.expectStream !== 'string' || !/^[^\s.*>]+$/.test(options.expectStream))) {
    throw new ConfigError('expectStream', 'Expected `expectStream` to be a stream name (no whitespace, `.`, `*` or `>`)');
  }
  return Object.freeze({
    servers,
    connectOptions: Object.freeze({ ...(options.connectOptions ?? {}) }),
    connection: options.connection,
    subject: options.subject ?? defaultSubject,
    messageId: options.messageId ?? ((m: OutboxMessage) => m.id),
    body: options.body ?? ((m: OutboxMessage) => m.payload),
    expectStream: options.expectStream,
    timeoutMs: parseDuration(options.timeout ?? '4s', 'timeout'),
    connectTimeoutMs: parseDuration(options.connectTimeout ?? '5s', 'connectTimeout'),
    streamMissing,
    onPublished: options.onPublished,
  });
}

function checkServers(value: unknown): readonly string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.some((s) => typeof s !== 'string' || s.trim() === '')) {
    throw new ConfigError('servers', 'Expected `servers` to be a server URL or a non-empty array of them');
  }
  return Object.freeze([...(list as string[])]);
}
