/**
 * Deliver outbox events to HTTP endpoints and webhooks (idempotency key, Standard Webhooks
 * signature, timeouts, status-code classification) and receive them exactly once with
 * `verifyWebhook` and an inbox.
 *
 * @module @leasehold/adapters-http
 */

// Public API of @leasehold/adapters-http, name by name.

export type { OutboxMessage, PublishContext, Publisher } from '@leasehold/outbox';
export { httpPublisher, type HttpPublisher } from './http-publisher.js';
export { type HttpPublisherOptions, type HeadersOption } from './http-publisher-options.js';
export { publisherTaskHandler, type PublisherTaskHandlerOptions, type PublishingTaskHandler } from './task-handler.js';
export { webhookEnvelope, type WebhookEnvelope } from './envelope.js';
export {
  classifyResponse,
  describeResponse,
  type ClassifyResponseOptions,
  type ConflictPolicy,
  type HttpClassification,
  type HttpResponseSummary,
} from './classify-response.js';
export { retryAfterMs } from './retry-after.js';
export { HttpRetryableError, HttpPermanentError } from './http-errors.js';
export { signWebhook, type SignWebhookInput, type WebhookHeaders } from './sign-webhook.js';
export { generateWebhookSecret, parseWebhookSecrets, WebhookKey } from './webhook-secret.js';
export { verifyWebhook, type IncomingHeaders, type VerifiedWebhook, type VerifyWebhookOptions } from './verify-webhook.js';
export {
  WebhookVerificationError,
  WEBHOOK_VERIFICATION_REASONS,
  type WebhookVerificationReason,
} from './webhook-verification-error.js';
export { createInbox, type Inbox, type InboxOptions, type InboxPruneOptions, type ReceiveOptions, type ReceiveResult } from './inbox.js';
export { migrateInbox } from './migrate-inbox.js';
