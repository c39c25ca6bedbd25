// Signatures made by httpPublisher, checked by an implementation of the Standard Webhooks
// specification written here from its text, and verifyWebhook checked against that one.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  generateWebhookSecret,
  httpPublisher,
  verifyWebhook,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from '@leasehold/adapters-http';
import { useTestServer, type ReceivedRequest } from './http-server.js';
import { makeMessage, quiet } from './message.js';

// --- an independent reading of the specification ------------------------------------------
// "The content to sign is composed by concatenating the id, timestamp and payload, separated
// by the full-stop character (.)"; "the signature is base64 encoded HMAC-SHA256"; "secrets are
// base64 encoded, prefixed with whsec_"; "the signature header is a space delimited list of
// signatures, each prefixed by its version identifier and a comma (v1,)".
function specSign(secret: string, id: string, timestamp: string, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
}

function specSignatures(header: string): string[] {
  return header.split(' ').filter((s) => s.startsWith('v1,')).map((s) => s.slice(3));
}

function specVerifies(request: ReceivedRequest, secret: string): boolean {
  const id = String(request.headers['webhook-id']);
  const timestamp = String(request.headers['webhook-timestamp']);
  const expected = specSign(secret, id, timestamp, request.body);
  return specSignatures(String(request.headers['webhook-signature'])).includes(expected);
}
// --------------------------------------------------------------------------------------------

const server = useTestServer();
const [current, previous] = [generateWebhookSecret(), generateWebhookSecret()];

function reasonOf(fn: () => unknown): WebhookVerificationReason | 'accepted' {
  try {
    fn();
    return 'accepted';
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason;
    throw error;
  }
}

describe('signing', () => {
  it('signs each request so that the specification, read independently, verifies it', async () => {
    server.reset((_req, res) => res.writeHead(204).end());
    const message = makeMessage();
    const before = Math.floor(Date.now() / 1000);
    await httpPublisher({ url: `${server.origin}/hook`, signingSecrets: current }).publish(message, quiet);
    const [request] = server.requests;
    expect(request!.headers['webhook-id']).toBe(message.id);
    const timestamp = Number(request!.headers['webhook-timestamp']);
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(specSignatures(String(request!.headers['webhook-signature']))).toHaveLength(1);
    expect(specVerifies(request!, current)).toBe(true);
    expect(specVerifies(request!, previous)).toBe(false);
  });

  it('signs with every secret during a rotation; each verifies on its own', async () => {
    server.reset((_req, res) => res.writeHead(204).end());
    await httpPublisher({ url: `${server.origin}/hook`, signingSecrets: [current, previous] }).publish(makeMessage(), quiet);
    const [request] = server.requests;
    expect(specSignatures(String(request!.headers['webhook-signature']))).toHaveLength(2);
    expect(specVerifies(request!, current)).toBe(true);
    expect(specVerifies(request!, previous)).toBe(true);
  });
});

describe('verifyWebhook on a receiving server', () => {
  // the receiver answers 204 when verified, 401 with the reason otherwise
  function receiver(secrets: string | string[]) {
    server.reset((req, res, body) => {
      try {
        verifyWebhook(req.headers, body, secrets);
        res.writeHead(204).end();
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error;
        res.writeHead(401).end(error.reason);
      }
    });
  }

  it('accepts what httpPublisher sends, with the old or the new secret during a rotation', async () => {
    receiver([previous, current]);
    await httpPublisher({ url: `${server.origin}/hook`, signingSecrets: current }).publish(makeMessage(), quiet);
    receiver(current);
    await httpPublisher({ url: `${server.origin}/hook`, signingSecrets: [current, previous] }).publish(makeMessage(), quiet);
  });

  it('rejects a wrong secret with 401, which the publisher reads as permanent', async () => {
    receiver(previous);
    await expect(httpPublisher({ url: `${server.origin}/hook`, signingSecrets: current }).publish(makeMessage(), quiet)).rejects.toThrow(
      /HTTP 401 Unauthorized: SIGNATURE_MISMATCH/,
    );
  });

  it('accepts a signature made by the independent implementation, and rejects tampering and staleness', async () => {
    server.reset((_req, res) => res.writeHead(204).end());
    await httpPublisher({ url: `${server.origin}/hook`, signingSecrets: current }).publish(makeMessage(), quiet);
    const sent = server.requests[0]!;
    const body = sent.body;
    const id = String(sent.headers['webhook-id']);
    const now = Math.floor(Date.now() / 1000);
    const headers = (timestamp: number, b = body, secret = current) => ({
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': `v1,${specSign(secret, id, String(timestamp), b)}`,
    });

    expect(reasonOf(() => verifyWebhook(sent.headers, body, current))).toBe('accepted');
    expect(reasonOf(() => verifyWebhook(headers(now), body, current))).toBe('accepted');
    expect(reasonOf(() => verifyWebhook(headers(now), Buffer.from(body), current))).toBe('accepted');
    // tampered body: same headers, one byte changed
    expect(reasonOf(() => verifyWebhook(sent.headers, body.replace('42', '43'), current))).toBe('SIGNATURE_MISMATCH');
    // wrong secret on either side
    expect(reasonOf(() => verifyWebhook(sent.headers, body, previous))).toBe('SIGNATURE_MISMATCH');
    expect(reasonOf(() => verifyWebhook(headers(now, body, previous), body, current))).toBe('SIGNATURE_MISMATCH');
    // a correctly signed but stale (replayed) or future-dated delivery
    expect(reasonOf(() => verifyWebhook(headers(now - 6 * 60), body, current))).toBe('TIMESTAMP_TOO_OLD');
    expect(reasonOf(() => verifyWebhook(headers(now + 6 * 60), body, current))).toBe('TIMESTAMP_TOO_NEW');
    expect(reasonOf(() => verifyWebhook(headers(now - 6 * 60), body, current, { tolerance: '10m' }))).toBe('accepted');
  });
});
