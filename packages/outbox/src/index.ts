/**
 * A transactional outbox on PostgreSQL: record an event in the same transaction as the change it
 * describes, then deliver it from many dispatchers, in order per aggregate where you ask for it,
 * without losing it and without two dispatchers sending it at once.
 *
 * @module @leasehold/outbox
 */

// Public API of @leasehold/outbox, name by name.

export { migrate } from './migrate/migrate.js';
export { outboxTable, type OutboxRow } from './outbox-table.js';
export type { OutboxEvent } from './event.js';
export { createOutbox, type Outbox, type OutboxOptions } from './outbox.js';
export type { DeadListOptions, DeadMessage, OutboxStats, PurgeDoneOptions, PurgeDoneResult } from './operations.js';
// core's dead-letter operations report in this shape; re-exported so outbox users need not import core
export type { DeadResolution } from '@leasehold/core';
export type { OutboxMessage, Publisher, PublishContext } from './publisher.js';
export { toOutboxMessage } from './outbox-message.js';
export { createDispatcher, type Dispatcher, type DispatcherOptions } from './dispatcher.js';
