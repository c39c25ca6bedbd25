/** Why a delivery failed verification; stable, for metrics and responses. */
export const WEBHOOK_VERIFICATION_REASONS = [
  /** `webhook-id`, `webhook-timestamp` or `webhook-signature` is absent or empty. */
  'MISSING_HEADER',
  /** `webhook-timestamp` is not whole unix seconds. */
  'INVALID_TIMESTAMP',
  /** Older than the tolerance: a replay, or a sender whose clock is far behind. */
  'TIMESTAMP_TOO_OLD',
  /** Newer than the tolerance: a sender whose clock is far ahead. */
  'TIMESTAMP_TOO_NEW',
  /** No `v1` signature matches any secret: tampered body, wrong secret, or not signed by the sender. */
  'SIGNATURE_MISMATCH',
] as const;

/** One of {@link WEBHOOK_VERIFICATION_REASONS}. */
export type WebhookVerificationReason = (typeof WEBHOOK_VERIFICATION_REASONS)[number];

/**
 * A delivery that must not be trusted; answer it with 400 or 401. The message names the reason
 * and the message id, never a secret or a signature.
 *
 * @example
 * try { verifyWebhook(req.headers, rawBody, secrets); }
 * catch (e) { if (e instanceof WebhookVerificationError) return res.writeHead(401).end(e.reason); throw e; }
 */
export class WebhookVerificationError extends Error {
  /** Stable across versions: `'WEBHOOK_VERIFICATION'`. */
  readonly code = 'WEBHOOK_VERIFICATION';
  readonly reason: WebhookVerificationReason;
  /** The `webhook-id` received, when there was one. */
  readonly messageId: string | undefined;

  constructor(reason: WebhookVerificationReason, message: string, messageId?: string) {
    super(`webhook verification failed (${reason}): ${message}`);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
    this.messageId = messageId;
  }
}
