// `leasehold stats` reads core's per-queue statement, so the CLI, applications and the
// dashboard share one definition of every figure (the oldest pending age above all).
export { leaseQueueStats as queueStats, type QueueStats } from '@leasehold/core';
