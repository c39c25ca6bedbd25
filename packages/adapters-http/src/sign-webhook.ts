import { toWebhookKeys, type WebhookKey } from './webhook-secret.js';

/**
 * The three headers of a Standard Webhooks delivery. (A type literal, not an interface, so it
 * can be passed wherever a header record is expected.)
 */
export type WebhookHeaders = {
  /** The message id: the same on every retry, so receivers can deduplicate. */
  readonly 'webhook-id': string;
  /** Unix time of this attempt, in whole seconds. */
  readonly 'webhook-timestamp': string;
  /** `v1,<base64 signature>`, one per secret, separated by spaces. */
  readonly 'webhook-signature': string;
};

/** What {@link signWebhook} signs. */
export interface SignWebhookInput {
  /** The message id (`webhook-id`). */
  readonly id: string;
  /** The exact body sent, byte for byte. */
  readonly body: string | Uint8Array;
  /** Unix seconds. @defaultValue the current time */
  readonly timestamp?: number;
}

/**
 * Signs a delivery per the Standard Webhooks specification: for each secret, base64 of
 * HMAC-SHA256 over `${id}.${timestamp}.${body}` keyed with the secret's base64-decoded part,
 * sent as `v1,<signature>`; several secrets (rotation) give several space-separated signatures.
 *
 * @example
 * const headers = signWebhook({ id: 'msg_1', body: JSON.stringify(event) }, process.env.WEBHOOK_SECRET!);
 * await fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
 */
export function signWebhook(input: SignWebhookInput, secrets: string | readonly string[] | readonly WebhookKey[]): WebhookHeaders {
  const keys = toWebhookKeys(secrets);
  const timestamp = String(input.timestamp ?? Math.floor(Date.now() / 1000));
  const content = signedContent(input.id, timestamp, input.body);
  return {
    'webhook-id': input.id,
    'webhook-timestamp': timestamp,
    'webhook-signature': keys.map((key) => `v1,${key.hmac(content).toString('base64')}`).join(' '),
  };
}

/** `${id}.${timestamp}.${body}` as bytes: the body is signed as sent, never re-encoded. */
export function signedContent(id: string, timestamp: string, body: string | Uint8Array): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), bytes]);
}
