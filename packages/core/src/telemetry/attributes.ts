/**
 * The attribute names leasehold's spans and metrics carry: OpenTelemetry's messaging semantic
 * conventions where they have one, `leasehold.*` where they do not (see docs/observability.md).
 */
export const ATTR = {
  /** Always `leasehold`. */
  system: 'messaging.system',
  /** `process` for a task's handler, `dispatch` for an outbox message's publish. */
  operationName: 'messaging.operation.name',
  /** The convention's kind of operation: `process`. */
  operationType: 'messaging.operation.type',
  /** The task's name, or the outbox message's event type. */
  destination: 'messaging.destination.name',
  /** The row id: stable across attempts, the idempotency key downstream. */
  messageId: 'messaging.message.id',
  /** This attempt's number, from 1. */
  attempt: 'leasehold.attempt',
  /** The leased table, schema-qualified: `leasehold.task`, `leasehold.outbox`. */
  table: 'leasehold.table',
  /** What the worker did with the attempt: succeeded, retried, deferred, dead, lease_lost, released. */
  outcome: 'leasehold.outcome',
} as const;

/** `messaging.system` of everything leasehold records. */
export const MESSAGING_SYSTEM = 'leasehold';
