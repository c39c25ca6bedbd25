import { toError } from '@leasehold/core/internal';

/**
 * The verdict on one failed JetStream publish, as a union on `kind`. `no-responders` needs one
 * more look (is there a stream for the subject at all?) before it becomes retryable or
 * permanent; see {@link classifyNatsError}.
 */
export type NatsClassification =
  | { readonly kind: 'retryable'; readonly reason: string }
  | { readonly kind: 'permanent'; readonly reason: string }
  | { readonly kind: 'no-responders'; readonly reason: string };

/**
 * JetStream API error codes (`err_code`) that retrying cannot fix even though the server did
 * not say 4xx, and 4xx ones that a retry can: the rest follow the status (5xx retryable,
 * 4xx permanent). From nats-server's `server/errors.json`.
 */
const PERMANENT_CODES = new Map<number, string>([
  [10054, 'message larger than the stream allows'],
  [10060, 'the subject is captured by another stream than expected'],
]);
const RETRYABLE_CODES = new Map<number, string>([
  [10008, 'JetStream cluster temporarily unavailable'],
  [10023, 'insufficient resources'],
  [10077, 'the stream could not store the message (full, with discard new?)'],
]);

/**
 * Classifies what a JetStream publish threw, purely (errors are recognised by `name` and
 * fields, so duplicate copies of the client library classify the same):
 *
 * - no PubAck within the timeout, a connection closed, draining or failing → `retryable`: the
 *   message may or may not be stored; the retry carries the same `Nats-Msg-Id`, so the stream
 *   drops it if it was;
 * - "no responders" (503): nothing listens on the subject — no stream captures it, or the
 *   stream has no leader right now (an election, a restart) → `no-responders`;
 * - a JetStream API error: by `err_code` where listed, else 5xx → `retryable`, 4xx → `permanent`;
 * - an invalid subject, argument or a payload over the server's `max_payload`, a permission
 *   violation → `permanent`;
 * - anything else → `retryable` (core's default for an unclassified failure).
 *
 * @example
 * classifyNatsError(Object.assign(new Error('timeout'), { name: 'TimeoutError' }));
 * // { kind: 'retryable', reason: 'no PubAck within the timeout (TimeoutError: timeout)' }
 */
export function classifyNatsError(thrown: unknown): NatsClassification {
  const error = toError(thrown);
  const chain = causes(error);
  const described = `${error.name}: ${error.message}`;
  if (chain.some(isNoResponders)) return { kind: 'no-responders', reason: `no responders on the subject (503)` };
  if (chain.some((e) => e.name === 'TimeoutError')) return { kind: 'retryable', reason: `no PubAck within the timeout (${described})` };
  const api = chain.find((e) => typeof (e as { code?: unknown }).code === 'number' && typeof (e as { status?: unknown }).status === 'number');
  if (api) return classifyApiError(api as Error & { code: number; status: number });
  for (const e of chain) {
    switch (e.name) {
      case 'ClosedConnectionError':
      case 'DrainingConnectionError':
      case 'ConnectionError':
      case 'ProtocolError':
      case 'AuthorizationError':
      case 'UserAuthenticationExpiredError':
        return { kind: 'retryable', reason: `connection: ${e.name}: ${e.message}` };
      case 'InvalidSubjectError':
      case 'InvalidArgumentError':
      case 'PermissionViolationError':
        return { kind: 'permanent', reason: `${e.name}: ${e.message}` };
      default:
    }
  }
  return { kind: 'retryable', reason: described };
}

function classifyApiError(e: Error & { code: number; status: number }): NatsClassification {
  const reason = `JetStream error ${e.status}/${e.code}: ${e.message}`;
  const permanent = PERMANENT_CODES.get(e.code);
  if (permanent) return { kind: 'permanent', reason: `${reason} (${permanent})` };
  const retryable = RETRYABLE_CODES.get(e.code);
  if (retryable) return { kind: 'retryable', reason: `${reason} (${retryable})` };
  if (e.status >= 500 || e.status === 408 || e.status === 429) return { kind: 'retryable', reason };
  return { kind: 'permanent', reason };
}

function isNoResponders(e: Error): boolean {
  if (e.name === 'NoRespondersError') return true;
  const probe = (e as { isNoResponders?: unknown }).isNoResponders;
  return typeof probe === 'function' && (probe as () => boolean).call(e) === true;
}

function causes(error: Error): Error[] {
  const chain: Error[] = [];
  for (let e: unknown = error; e instanceof Error && chain.length < 8; e = e.cause) chain.push(e);
  return chain;
}
