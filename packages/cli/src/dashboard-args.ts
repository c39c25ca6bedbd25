import { UsageError } from './errors.js';

/** What `leasehold dashboard` was told on its command line. */
export interface DashboardArgs {
  /** `--host`. @defaultValue '127.0.0.1' */
  readonly host: string;
  /** `--port`; 0 picks a free one. @defaultValue 4100 */
  readonly port: number;
  /** `--token`, when given (`LEASEHOLD_DASHBOARD_TOKEN` is read by the command). */
  readonly token: string | undefined;
  /** `--read-only`. */
  readonly readOnly: boolean;
}

/** Checks `dashboard`'s options; a mistake is a {@link UsageError} (exit code 2). */
export function dashboardArgsOf(values: { host?: string; port?: string; token?: string; 'read-only'?: boolean }): DashboardArgs {
  const host = values.host ?? '127.0.0.1';
  if (host.trim() === '') throw new UsageError('--host must be an address such as 127.0.0.1');
  const port = values.port === undefined ? 4100 : Number(values.port);
  if (!/^\d+$/.test(values.port ?? '0') || port > 65_535) {
    throw new UsageError(`--port must be a whole number from 0 to 65535, got "${values.port}"`);
  }
  if (values.token !== undefined && values.token.length < 16) throw new UsageError('--token must be at least 16 characters long');
  return { host, port, token: values.token, readOnly: values['read-only'] === true };
}
