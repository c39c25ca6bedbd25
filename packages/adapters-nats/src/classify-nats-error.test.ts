import { describe, expect, it } from 'vitest';
import { classifyNatsError } from './classify-nats-error.js';

const named = (name: string, message = name, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { name }, extra);
const apiError = (status: number, code: number) => named('JetStreamApiError', `api ${code}`, { status, code });

describe('classifyNatsError', () => {
  it.each([
    ['a PubAck timeout', named('TimeoutError', 'timeout'), 'retryable'],
    ['a closed connection', named('ClosedConnectionError'), 'retryable'],
    ['a draining connection', named('DrainingConnectionError'), 'retryable'],
    ['a refused connection', named('ConnectionError', 'connection refused'), 'retryable'],
    ['an invalid subject', named('InvalidSubjectError'), 'permanent'],
    ['a payload over max_payload', named('InvalidArgumentError', "'payload' max_payload size exceeded"), 'permanent'],
    ['a permission violation', named('PermissionViolationError'), 'permanent'],
    ['another stream than expected (10060)', apiError(400, 10060), 'permanent'],
    ['a message larger than the stream allows (10054)', apiError(400, 10054), 'permanent'],
    ['a cluster temporarily unavailable (10008)', apiError(503, 10008), 'retryable'],
    ['a full stream with discard new (10077)', apiError(503, 10077), 'retryable'],
    ['an unknown 5xx', apiError(500, 99999), 'retryable'],
    ['an unknown 4xx', apiError(400, 99999), 'permanent'],
    ['anything else', new Error('boom'), 'retryable'],
    ['a thrown string', 'boom', 'retryable'],
  ])('%s → %s', (_name, thrown, kind) => {
    expect(classifyNatsError(thrown).kind).toBe(kind);
  });

  it('finds no responders through the cause chain (the client wraps it as JetStreamNotEnabled)', () => {
    const cause = Object.assign(named('RequestError', "no responders: 'x'"), { isNoResponders: () => true });
    const thrown = Object.assign(named('JetStreamNotEnabled', 'jetstream is not enabled'), { cause });
    expect(classifyNatsError(thrown)).toEqual({ kind: 'no-responders', reason: 'no responders on the subject (503)' });
  });

  it('names the API status and code in the reason', () => {
    expect(classifyNatsError(apiError(400, 10060)).reason).toMatch(/400\/10060.*another stream/);
  });
});
