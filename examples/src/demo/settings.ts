// The demo's knobs, in one place. Short leases and timeouts keep the faults visible in seconds;
// production values are minutes (see packages/outbox/README.md).

/** Orders placed; each writes two outbox events (OrderPlaced, then OrderPaid). */
export const ORDERS = 150;
/** Customers ordering at the same time. */
export const CLIENTS = 3;
/** The receiver's first requests answered `503 Service Unavailable` (with `Retry-After: 1`). */
export const RECEIVER_DOWN_FOR_REQUESTS = 40;
/** The child-process worker is SIGKILLed right after its n-th delivery the receiver applied. */
export const KILL_AFTER_DELIVERIES = 3;
/** Dispatcher workers: three in this process and one child process (the one that gets killed). */
export const WORKERS = ['w1', 'w2', 'w3'] as const;
export const DOOMED_WORKER = 'w4';
/** How long a claimed message belongs to its worker: a killed worker's messages come back after this. */
export const LEASE = '5s';
/** One HTTP delivery may take this long; `batch × publishTimeout` must fit in the lease. */
export const PUBLISH_TIMEOUT = '2s';
export const BACKOFF = { base: '100ms', cap: '1s' } as const;
/** Retries and expired leases are found by polling; new events wake workers through NOTIFY. */
export const POLL_INTERVAL = '250ms';
/** Gives up (exit code 1) if the events are not all delivered by then. */
export const DEADLINE_MS = 90_000;

/** Schemas: the order service with its outbox, and the receiving service with its inbox. */
export const SHOP_SCHEMA = 'leasehold_demo';
export const RECEIVER_SCHEMA = 'leasehold_demo_receiver';
