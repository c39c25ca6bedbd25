import { migrateInbox } from '@leasehold/adapters-http';
import { migrate as migrateOutbox } from '@leasehold/outbox';
import { EXIT_CODES } from '../exit-codes.js';
import type { CommandHandler } from './context.js';

/**
 * `leasehold migrate [--with-inbox]`: creates or upgrades core's task table and the outbox
 * (the outbox's migrate runs core's line first), and with `--with-inbox` the receiving side's
 * inbox table. Idempotent; safe while workers run.
 */
export const migrateCommand: CommandHandler = async ({ invocation, pool, io }) => {
  const { schema } = invocation;
  const applied = [...(await migrateOutbox(pool, { schema })).applied];
  if (invocation.withInbox) applied.push(...(await migrateInbox(pool, { schema })).applied);
  if (invocation.json) io.out(JSON.stringify({ schema, applied }));
  else io.out(applied.length > 0 ? `schema "${schema}": applied ${applied.join(', ')}` : `schema "${schema}" is up to date`);
  return EXIT_CODES.ok;
};
