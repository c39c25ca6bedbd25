/**
 * The operators' web dashboard for leasehold queues and outboxes: what waits, what runs, what
 * died and why, and retry or skip it; served from your own process or by `leasehold dashboard`.
 *
 * @module @leasehold/dashboard
 */

// Public API of @leasehold/dashboard, name by name.

export { mountDashboard, type DashboardHandler } from './mount-dashboard.js';
export { startDashboard, type StartDashboardOptions, type RunningDashboard } from './start-dashboard.js';
export { TABLE_KINDS, type TableKind, type DashboardOptions, type RedactContext, type AuthHook } from './options.js';
// read statements the dashboard adds to core's, for a leased table (core's or the outbox's)
export { leasedListPage, SCAN_WINDOW, type ListFilter, type ListRange, type ListRow, type ListPage } from './sql/leased-list-page.js';
export { leasedIdAt } from './sql/leased-id-at.js';
export { leasedIdBounds, type IdBounds } from './sql/leased-id-bounds.js';
export { leasedThroughput, type Throughput } from './sql/leased-throughput.js';
