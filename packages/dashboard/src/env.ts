import type { HttpBindings } from '@hono/node-server';
import type { LeasedTable } from '@leasehold/core';
import { outboxTable } from '@leasehold/outbox';
import { taskTable } from '@leasehold/core';
import type { Hono } from 'hono';
import type { DashboardSettings, TableKind } from './options.js';
import type { IdempotencyStore } from './security/idempotency.js';
import type { PageContext } from './views/page-context.js';
import type { ResolutionOutcome } from './views/confirm.js';
import type { RunOutcome } from './run/run-action.js';

/** The Hono environment of the dashboard: node's request when there is one, and the page context. */
export interface DashboardEnv {
  Bindings: Partial<HttpBindings>;
  Variables: { page: PageContext };
}

/** The dashboard's Hono app. */
export type DashboardApp = Hono<DashboardEnv>;

/** What the routes share. */
export interface RouteDeps {
  readonly settings: DashboardSettings;
  readonly tables: Readonly<Record<TableKind, LeasedTable<unknown>>>;
  readonly outcomes: IdempotencyStore<ResolutionOutcome>;
  /** Outcomes of cancel / signal / fork on a run's page, by idempotency key. */
  readonly runOutcomes: IdempotencyStore<RunOutcome>;
}

/** The leased tables of a schema, described once. */
export function leasedTables(schema: string): RouteDeps['tables'] {
  return { task: taskTable(schema) as LeasedTable<unknown>, outbox: outboxTable(schema) as LeasedTable<unknown> };
}
