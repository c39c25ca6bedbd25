import { ConfigError, noPreparedStatements, type Executor, type TransactionSource } from '@leasehold/core';
import { checkOptionKeys, optionKeys, parseInteger, validateIdentifier } from '@leasehold/core/internal';

/** Which leased table a row belongs to. */
export const TABLE_KINDS = ['task', 'outbox'] as const;

/** One of {@link TABLE_KINDS}. */
export type TableKind = (typeof TABLE_KINDS)[number];

/** What {@link DashboardOptions.redact} is asked to show. */
export interface RedactContext {
  readonly table: TableKind;
  /**
   * `payload` and `checkpoint` (tasks), `payload` and `headers` (outbox messages), `event`: a
   * progress event's value (`ctx.setEvent`) on a workflow run's page.
   */
  readonly field: 'payload' | 'checkpoint' | 'headers' | 'event';
  readonly id: string;
  /** Task name or event type. */
  readonly name: string;
}

/** Decides whether a request may see the dashboard (and, unless read-only, act on it). */
export type AuthHook = (request: Request) => boolean | Promise<boolean>;

/** Options of {@link mountDashboard} and {@link startDashboard}. */
export interface DashboardOptions {
  /**
   * Where the leasehold tables are: a `pg` `Pool` or a `Kysely` instance. Every read is one
   * statement on it; every retry / skip runs in a transaction of its own.
   */
  readonly database: Executor & TransactionSource;
  /** Schema of the leasehold tables. @defaultValue 'leasehold' */
  readonly schema?: string;
  /**
   * URL path the dashboard is served under, e.g. `/admin/queues`; every link and form uses it.
   * @defaultValue '/'
   */
  readonly basePath?: string;
  /** Show everything, change nothing: no retry / skip / pause buttons, and every POST is refused. @defaultValue false */
  readonly readOnly?: boolean;
  /**
   * Your own check of each request (a session cookie, an SSO header set by your proxy …). With
   * neither `auth` nor `token`, the dashboard answers loopback clients only.
   */
  readonly auth?: AuthHook;
  /**
   * A shared secret: requests carry it as `Authorization: Bearer <token>`, or a person enters it
   * once on the login page (kept in an HttpOnly cookie as its SHA-256). At least 16 characters.
   */
  readonly token?: string;
  /**
   * Replaces what is shown of a payload, checkpoint or header set (the value is never shown
   * otherwise than through it). Return what may be shown, e.g. the value with `email` masked.
   * @defaultValue shows values as stored
   */
  readonly redact?: (value: unknown, context: RedactContext) => unknown;
  /**
   * Who is acting, for the reason written on a retried or skipped row (`… (via the leasehold
   * dashboard, alice)`). @defaultValue nobody named
   */
  readonly actor?: (request: Request) => string | undefined | Promise<string | undefined>;
  /**
   * How often the overview refreshes itself, in ms; stretched to ten times the counting time when
   * counting takes longer than a tenth of it (a huge, unpurged table). @defaultValue 5000
   */
  readonly refreshIntervalMs?: number;
  /** Rows per page of the lists. @defaultValue 50 */
  readonly pageSize?: number;
  /**
   * `database` is a `pg` pool that reaches PostgreSQL through a pooler in transaction mode: send
   * no named prepared statements through it (core's `noPreparedStatements()`). The dashboard
   * holds no session state and does not LISTEN. @defaultValue false
   */
  readonly noPreparedStatements?: boolean;
}

/** {@link DashboardOptions} checked and normalised. */
export interface DashboardSettings {
  readonly database: Executor & TransactionSource;
  readonly schema: string;
  /** Without a trailing slash; '' at the root. */
  readonly basePath: string;
  readonly readOnly: boolean;
  readonly auth: AuthHook | undefined;
  readonly token: string | undefined;
  readonly redact: (value: unknown, context: RedactContext) => unknown;
  readonly actor: DashboardOptions['actor'];
  readonly refreshIntervalMs: number;
  readonly pageSize: number;
}

const BASE_PATH = /^(\/[A-Za-z0-9._~-]+)*\/?$/;

/** Checks and freezes the options; a mistake throws `ConfigError` naming the option. */
export const DASHBOARD_KEYS = ['database', 'schema', 'basePath', 'readOnly', 'auth', 'token', 'redact', 'actor', 'refreshIntervalMs', 'pageSize', 'noPreparedStatements'] as const;
const DASHBOARD_OPTIONS = optionKeys<DashboardOptions>()('mountDashboard', DASHBOARD_KEYS, {
  host: 'host belongs on startDashboard; mountDashboard serves on your own server',
  port: 'port belongs on startDashboard; mountDashboard serves on your own server',
});

/** The keys of {@link DashboardOptions}. @internal */
export function dashboardSettings(options: DashboardOptions): DashboardSettings {
  checkOptionKeys(options, DASHBOARD_OPTIONS);
  const database = options?.database as unknown as { query?: unknown; getExecutor?: unknown } | undefined;
  if (database === undefined || database === null || (typeof database.query !== 'function' && typeof database.getExecutor !== 'function')) {
    throw new ConfigError('database', 'Expected `database` to be a pg Pool or a Kysely instance');
  }
  const basePath = options.basePath ?? '/';
  if (typeof basePath !== 'string' || !BASE_PATH.test(basePath)) {
    throw new ConfigError('basePath', `Expected \`basePath\` to be a URL path such as /admin/queues, got ${JSON.stringify(basePath)}`);
  }
  for (const name of ['auth', 'redact', 'actor'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw new ConfigError(name, `Expected \`${name}\` to be a function`);
  }
  if (options.token !== undefined && (typeof options.token !== 'string' || options.token.length < 16)) {
    throw new ConfigError('token', 'Expected `token` to be a string of at least 16 characters');
  }
  if (options.noPreparedStatements !== undefined && typeof options.noPreparedStatements !== 'boolean') {
    throw new ConfigError('noPreparedStatements', 'Expected `noPreparedStatements` to be true or false');
  }
  if (options.noPreparedStatements === true) noPreparedStatements(options.database);
  return Object.freeze({
    database: options.database,
    schema: validateIdentifier(options.schema ?? 'leasehold', 'schema'),
    basePath: basePath.replace(/\/$/, ''),
    readOnly: options.readOnly === true,
    auth: options.auth,
    token: options.token,
    redact: options.redact ?? ((value: unknown) => value),
    actor: options.actor,
    refreshIntervalMs: parseInteger(options.refreshIntervalMs ?? 5_000, 'refreshIntervalMs', 500, 3_600_000),
    pageSize: parseInteger(options.pageSize ?? 50, 'pageSize', 1, 500),
  });
}
