// Public API of @leasehold/outbox, name by name.

export { migrate } from './migrate/migrate.js';
export { outboxTable, type OutboxRow } from './outbox-table.js';
export type { OutboxEvent } from './event.js';
export { createOutbox, type Outbox, type OutboxOptions } from './outbox.js';
export type { DeadListOptions, PurgeDoneOptions, PurgeDoneResult } from './operations.js';
export type { OutboxStats } from './sql/outbox-stats.js';
export type { DeadMessage } from './sql/outbox-dead-list.js';
export type { DeadResolution } from './sql/dead-resolution.js';
export type { OutboxMessage, Publisher, PublishContext } from './publisher.js';
export { toOutboxMessage } from './outbox-message.js';
export { createDispatcher, type Dispatcher, type DispatcherOptions } from './dispatcher.js';
