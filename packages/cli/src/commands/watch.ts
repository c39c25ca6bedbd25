import { setTimeout as sleep } from 'node:timers/promises';
import { EXIT_CODES } from '../exit-codes.js';
import { formatAge } from '../format/age.js';
import type { CommandHandler } from './context.js';
import { readStats, renderStats } from './stats.js';

const CLEAR_SCREEN = '\x1b[H\x1b[2J';

/**
 * `leasehold watch [--interval 2s]`: `stats` again and again until Ctrl-C, which ends it with
 * exit code 0. On a terminal the screen is redrawn in place; piped, each refresh is appended
 * (one JSON object per line with `--json`). A failed refresh is shown and retried: watching
 * is how a person follows a database restart.
 */
export const watchCommand: CommandHandler = async (ctx) => {
  const tables = await ctx.tables();
  const { intervalMs, json } = ctx.invocation;
  while (!ctx.signal.aborted) {
    const at = new Date();
    try {
      const report = await readStats(ctx.pool, tables);
      if (json) ctx.io.out(JSON.stringify({ at: at.toISOString(), ...report }));
      else {
        const header = `leasehold watch · schema ${tables.schema} · database ${ctx.database} · ${at.toLocaleTimeString()} · every ${formatAge(intervalMs)} · Ctrl-C to stop`;
        ctx.io.out(`${ctx.io.isTTY ? CLEAR_SCREEN : '\n'}${header}\n\n${renderStats(report)}`);
      }
    } catch (error) {
      if (ctx.signal.aborted) break;
      ctx.io.err(`leasehold: refresh failed at ${at.toLocaleTimeString()}: ${(error as Error).message}`);
    }
    await sleep(intervalMs, undefined, { signal: ctx.signal }).catch(() => undefined);
  }
  return EXIT_CODES.ok;
};
