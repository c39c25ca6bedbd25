import type { DashboardTables } from '../sql/dashboard-tables.js';

/** The pages of the main navigation. */
export type Section = 'overview' | 'tasks' | 'outbox' | 'dead' | 'schedules' | 'limits' | 'versions';

/** What every page needs besides its own data. */
export interface PageContext {
  /** The dashboard's base path ('' at the root); every link starts with it. */
  readonly base: string;
  readonly readOnly: boolean;
  /** The CSRF token every form posts as `_csrf`. */
  readonly csrf: string;
  readonly schema: string;
  /** Rows per list page. */
  readonly pageSize: number;
  readonly tables: DashboardTables;
}
