import type { BackoffPolicy } from '@leasehold/core';
import { fullJitterBackoff, toError, withTimeout } from '@leasehold/core/internal';
import { connect, type ChannelModel, type ConfirmChannel, type Message, type Options, type SocketOptions } from 'amqplib';
import type { AmqpFailure } from './classify-amqp-failure.js';

/** A failure of the link or of one publish, classified by `classifyAmqpFailure`. @internal */
export class AmqpFailureError extends Error {
  readonly failure: AmqpFailure;

  constructor(failure: AmqpFailure, options?: { cause?: unknown }) {
    super(failure.kind, options);
    this.name = 'AmqpFailureError';
    this.failure = failure;
  }
}

/** What was returned (`basic.return`) for one publish in flight. @internal */
export interface InFlight {
  readonly messageId: string;
  returned?: { readonly replyCode: number; readonly replyText: string; readonly exchange: string; readonly routingKey: string };
}

/**
 * One connection and its confirm channel. RabbitMQ sends a mandatory message's `basic.return`
 * before its `basic.ack` on the same channel, so a return marks the oldest publish in flight
 * with that message id, and the confirm callback then sees it. @internal
 */
export class AmqpChannel {
  readonly model: ChannelModel;
  readonly channel: ConfirmChannel;
  readonly #inFlight = new Map<string, InFlight[]>();
  /** Why the channel or connection closed, once it did (the broker's reason when it gave one). */
  closeReason: string | undefined;

  constructor(model: ChannelModel, channel: ConfirmChannel) {
    this.model = model;
    this.channel = channel;
    channel.on('return', (message: Message) => this.#onReturn(message));
  }

  /** Registers a publish; call {@link settle} from its confirm callback. */
  track(messageId: string): InFlight {
    const entry: InFlight = { messageId };
    const list = this.#inFlight.get(messageId);
    if (list) list.push(entry);
    else this.#inFlight.set(messageId, [entry]);
    return entry;
  }

  settle(entry: InFlight): void {
    const list = this.#inFlight.get(entry.messageId);
    const at = list?.indexOf(entry) ?? -1;
    if (list && at >= 0) list.splice(at, 1);
    if (list?.length === 0) this.#inFlight.delete(entry.messageId);
  }

  #onReturn(message: Message): void {
    const id = message.properties.messageId as unknown;
    const entry = typeof id === 'string' ? this.#inFlight.get(id)?.find((e) => e.returned === undefined) : undefined;
    if (!entry) return;
    const { replyCode, replyText, exchange, routingKey } = message.fields as unknown as {
      replyCode: number; replyText: string; exchange: string; routingKey: string;
    };
    entry.returned = { replyCode, replyText, exchange, routingKey };
  }
}

/** How {@link AmqpLink} connects. @internal */
export interface AmqpLinkSource {
  readonly url: string | Options.Connect;
  readonly socketOptions: SocketOptions;
  readonly connectTimeoutMs: number;
  readonly reconnect: BackoffPolicy;
  readonly setup: ((channel: ConfirmChannel) => Promise<void>) | undefined;
}

/**
 * The publisher's one connection and confirm channel, opened on first use and shared. When
 * either closes, the link forgets it; the next publish reconnects, but not before a full-jitter
 * backoff after each failure (`reconnect`), so a broker that is down is not hammered: until
 * then publishes fail at once as retryable. @internal
 */
export class AmqpLink {
  readonly #source: AmqpLinkSource;
  #current: Promise<AmqpChannel> | undefined;
  #failures = 0;
  #retryAt = 0;
  #lastError = '';
  #closed = false;

  constructor(source: AmqpLinkSource) {
    this.#source = source;
  }

  get(): Promise<AmqpChannel> {
    if (this.#closed) return Promise.reject(new AmqpFailureError({ kind: 'closed' }));
    if (this.#current) return this.#current;
    const waitMs = this.#retryAt - Date.now();
    if (waitMs > 0) {
      return Promise.reject(new AmqpFailureError({ kind: 'unavailable', detail: `${this.#lastError}; next connection attempt in ${waitMs} ms` }));
    }
    const opening = this.#open().then(
      (link) => {
        this.#failures = 0;
        return link;
      },
      (error: unknown) => {
        if (this.#current === opening) this.#current = undefined;
        this.#backOff(toError(error).message);
        throw new AmqpFailureError({ kind: 'unavailable', detail: this.#lastError }, { cause: error });
      },
    );
    this.#current = opening;
    return opening;
  }

  /** Ms until the next connection attempt is allowed (0: now, or connected). */
  get retryInMs(): number {
    return this.#current ? 0 : Math.max(0, this.#retryAt - Date.now());
  }

  /** Closes the connection (within `timeoutMs`); idempotent. */
  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    const current = this.#current;
    this.#current = undefined;
    const link = await current?.catch(() => undefined);
    if (link) await withTimeout(link.model.close(), timeoutMs, () => new Error('close timed out')).catch(() => undefined);
  }

  #backOff(detail: string): void {
    this.#failures++;
    this.#lastError = detail;
    this.#retryAt = Date.now() + fullJitterBackoff(this.#failures, this.#source.reconnect);
  }

  async #open(): Promise<AmqpChannel> {
    const { url, socketOptions, connectTimeoutMs, setup } = this.#source;
    let late = false;
    const opening = (async () => {
      const model = await connect(url as string, { ...socketOptions, timeout: connectTimeoutMs });
      try {
        const channel = await model.createConfirmChannel();
        await setup?.(channel);
        return new AmqpChannel(model, channel);
      } catch (error) {
        await model.close().catch(() => undefined);
        throw error;
      }
    })();
    // a connection that arrives after the timeout is closed, not leaked
    opening.then((link) => (late ? link.model.close().catch(() => undefined) : undefined)).catch(() => undefined);
    const link = await withTimeout(opening, connectTimeoutMs + 100, () => {
      late = true;
      return new Error(`no connection within ${connectTimeoutMs} ms`);
    });
    this.#watch(link);
    return link;
  }

  // Without an 'error' listener, an emitted error would end the process. Either close makes
  // the link open a new connection and channel for the next publish.
  #watch(link: AmqpChannel): void {
    const lost = (detail: string) => {
      link.closeReason ??= detail;
      if (this.#current === undefined || this.#closed) return;
      void this.#current.then((current) => {
        if (current !== link) return;
        this.#current = undefined;
        this.#backOff(`connection lost: ${detail}`);
        link.model.close().catch(() => undefined);
      }, () => undefined);
    };
    link.model.on('error', (error: Error) => lost(error.message));
    link.model.on('close', (error?: Error) => lost(error?.message ?? 'connection closed'));
    link.channel.on('error', (error: Error) => lost(error.message));
    link.channel.on('close', () => lost('channel closed'));
  }
}
