import { PermanentError, RetryableError } from '@leasehold/core';
import { assertNever, toError, untilAborted, withTimeout } from '@leasehold/core/internal';
import type { OutboxMessage, PublishContext, Publisher } from '@leasehold/outbox';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { classifyNatsError } from './classify-nats-error.js';
import {
  normalizeJetStreamOptions,
  type JetStreamPublisherOptions,
  type NormalizedJetStreamOptions,
} from './jetstream-publisher-options.js';
import { NatsConnectionHolder, type NatsLink } from './nats-connection.js';
import { encodeBody, envelopeHeaders } from './nats-headers.js';
import { checkedSubject } from './subject.js';

/** A {@link Publisher} to NATS JetStream, with the connection it holds. */
export interface JetStreamPublisher extends Publisher {
  /**
   * Drains and closes the connection the publisher opened (a `connection` you gave stays
   * open), within 5 s; idempotent. Call it after `await dispatcher.stop()`.
   */
  close(): Promise<void>;
}

/**
 * An outbox publisher to NATS JetStream. Each message goes to its subject
 * (`<aggregateType>.<eventType>` by default) with `Nats-Msg-Id` = the outbox id, so a copy
 * published again after a lost lease or a lost PubAck is dropped by the stream (within its
 * `duplicate_window`) and acknowledged as a duplicate — which counts as success. `publish`
 * resolves once the stream acknowledged (PubAck); failures are classified by
 * {@link classifyNatsError}. Every wait is bounded by `timeout` and the dispatcher's signal.
 *
 * @example
 * const publisher = jetStreamPublisher({ servers: 'nats://127.0.0.1:4222' });
 * const dispatcher = createDispatcher({ pool, publisher, publishTimeout: '5s' });
 * await dispatcher.start();
 * // on shutdown:
 * await dispatcher.stop({ timeout: '10s' });
 * await publisher.close();
 */
export function jetStreamPublisher(options: JetStreamPublisherOptions): JetStreamPublisher {
  const normalized = normalizeJetStreamOptions(options);
  const holder = new NatsConnectionHolder(normalized);
  return Object.freeze({
    publish: (message: OutboxMessage, context?: PublishContext) => publish(normalized, holder, message, context?.signal),
    close: () => holder.close(5_000),
  });
}

async function publish(
  options: NormalizedJetStreamOptions,
  holder: NatsConnectionHolder,
  message: OutboxMessage,
  signal: AbortSignal | undefined,
): Promise<void> {
  const subject = checkedSubject(options.subject(message), message);
  const what = `publish of message ${message.id} to ${subject}`;
  const msgID = options.messageId(message);
  if (typeof msgID !== 'string' || msgID === '') throw new PermanentError(`message ${message.id}: messageId(message) must be a non-empty string`);
  const data = encodeBody(options.body(message), message);
  const headers = natsHeaders();
  for (const [name, value] of envelopeHeaders(message)) headers.set(name, value);
  const deadline = Date.now() + options.timeoutMs;
  const link = await untilAborted(holder.get(), signal, what);
  const expect = options.expectStream === undefined ? {} : { streamName: options.expectStream };
  let leaderless: Error | undefined;
  for (;;) {
    try {
      const timeout = Math.max(1, deadline - Date.now());
      const ack = await untilAborted(link.js.publish(subject, data, { msgID, headers, timeout, expect }), signal, what);
      options.onPublished?.({ message, subject, stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate });
      return;
    } catch (error) {
      if (signal?.aborted) throw error;
      if (classifyNatsError(error).kind !== 'no-responders') throw failure(what, error);
      // Nobody answered: either no stream captures the subject (asking again cannot help, so
      // it is settled now) or its stream has no leader right now — an election takes 4–9 s in
      // nats-server. Then ask again until this attempt's timeout is spent, as a slow stream
      // would spend it, so an election does not burn a message's attempts in a few seconds.
      // The same Nats-Msg-Id makes every repeat safe.
      leaderless ??= await untilAborted(whyNoResponders(options, link, subject, what, error, deadline), signal, what);
      if (!(leaderless instanceof LeaderlessError)) throw leaderless;
      const waitMs = Math.min(NO_RESPONDERS_PAUSE_MS, deadline - Date.now());
      if (waitMs <= 0) throw leaderless;
      await untilAborted(new Promise((resolve) => setTimeout(resolve, waitMs)), signal, what);
    }
  }
}

/** Pause between publishes that found no responders, within one attempt. */
const NO_RESPONDERS_PAUSE_MS = 250;

/** The error the dispatcher gets for a failed publish: retryable or permanent, with why. */
function failure(what: string, error: unknown): Error {
  if (error instanceof PermanentError || error instanceof RetryableError) return error;
  const verdict = classifyNatsError(error);
  switch (verdict.kind) {
    case 'retryable':
    case 'no-responders':
      return new RetryableError(`${what}: ${verdict.reason}`, { cause: error });
    case 'permanent':
      return new PermanentError(`${what}: ${verdict.reason}`, { cause: error });
    default:
      return assertNever(verdict);
  }
}

/** "No responders" while a stream captures the subject (or JetStream could not say): worth asking again. */
class LeaderlessError extends RetryableError {}

/**
 * Nobody answered on the subject: asks JetStream, within what is left of the attempt, which
 * stream captures it. None → the stream is missing (retryable or permanent, as
 * `streamMissing` says); one → it has no leader right now (an election, a restart); no answer
 * → JetStream itself is away. The last two are a {@link LeaderlessError}: asked again.
 */
async function whyNoResponders(
  options: NormalizedJetStreamOptions,
  link: NatsLink,
  subject: string,
  what: string,
  error: unknown,
  deadline: number,
): Promise<Error> {
  const lookupMs = Math.max(1, deadline - Date.now());
  let stream: string;
  try {
    const jsm = await link.manager(options.timeoutMs);
    stream = await withTimeout(jsm.streams.find(subject), lookupMs, () => new Error(`no answer within ${lookupMs} ms`));
  } catch (lookup) {
    if ((lookup as { code?: unknown }).code === 10059) {
      const reason = `${what}: no stream captures subject ${subject} (503 no responders, and JetStream knows no stream for it)`;
      return options.streamMissing === 'permanent'
        ? new PermanentError(reason, { cause: error })
        : new RetryableError(reason, { cause: error });
    }
    return new LeaderlessError(`${what}: no responders, and JetStream did not answer a stream lookup (${toError(lookup).message})`, { cause: error });
  }
  return new LeaderlessError(`${what}: stream ${stream} did not answer (503 no responders: no leader right now?)`, { cause: error });
}
