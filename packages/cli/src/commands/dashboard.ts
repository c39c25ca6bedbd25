import type { RunningDashboard } from '@leasehold/dashboard';
import { isLeaseholdError, type ConfigError } from '@leasehold/core';
import { CommandError, UsageError } from '../errors.js';
import { EXIT_CODES } from '../exit-codes.js';
import type { CommandHandler } from './context.js';

/**
 * `leasehold dashboard [--host 127.0.0.1] [--port 4100] [--token t] [--read-only]`: serves
 * `@leasehold/dashboard` on the command's pool until Ctrl-C, which ends it with exit code 0.
 * Binding anything but a loopback address needs a token (`--token`, or
 * `LEASEHOLD_DASHBOARD_TOKEN`, which other users cannot read from the process list): the
 * dashboard refuses to start without one, and that is a usage error (exit code 2).
 */
export const dashboardCommand: CommandHandler = async (ctx) => {
  const tables = await ctx.tables(); // an unmigrated schema fails here, in words
  const { host, port, readOnly } = ctx.invocation.dashboard;
  // the CLI is a program, not a library: reading its own environment is its job
  const token = ctx.invocation.dashboard.token ?? (process.env.LEASEHOLD_DASHBOARD_TOKEN || undefined);
  // loaded here, so the other commands do not load the web stack
  const { startDashboard } = await import('@leasehold/dashboard');
  let dashboard: RunningDashboard;
  try {
    dashboard = await startDashboard({ database: ctx.pool, schema: tables.schema, host, port, token, readOnly });
  } catch (error) {
    if (isLeaseholdError(error, 'CONFIG')) throw new UsageError(explainConfig(error as ConfigError, host));
    const e = error as { code?: string; message?: string };
    if (e.code === 'EADDRINUSE') throw new CommandError(`port ${port} on ${host} is in use: choose another with --port (0 picks a free one)`);
    if (e.code === 'EADDRNOTAVAIL') throw new CommandError(`${host} is not an address of this machine`);
    throw error;
  }
  try {
    if (ctx.invocation.json) ctx.io.out(JSON.stringify({ url: dashboard.url, readOnly, token: token !== undefined }));
    else ctx.io.out(`leasehold dashboard on ${dashboard.url}${readOnly ? ' (read-only)' : ''}${token === undefined ? '' : ' (token required)'} · Ctrl-C to stop`);
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      ctx.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    await dashboard.close();
  }
  return EXIT_CODES.ok;
};

function explainConfig(error: ConfigError, host: string): string {
  if (error.option !== 'host') return error.message.replaceAll('`', '');
  return `refusing to listen on ${host} without a token: anyone who can reach it could read payloads and retry or skip dead work. ` +
    'Use --host 127.0.0.1 (the default), or give --token (or set LEASEHOLD_DASHBOARD_TOKEN)';
}
