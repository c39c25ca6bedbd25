import { MIGRATIONS as CORE } from '../packages/core/src/migrate/generated-migrations.js';
import { MIGRATIONS as OUTBOX } from '../packages/outbox/src/migrate/generated-migrations.js';

/**
 * What a first `migrate` reports as applied for these lines: every migration the package embeds,
 * in order (so a new migration needs no edit here, and one left out of the run is caught).
 */
export function allMigrations(...lines: ReadonlyArray<'core' | 'outbox'>): string[] {
  const embedded = { core: CORE, outbox: OUTBOX };
  return lines.flatMap((line) => embedded[line].map((m) => `${line}:${m.version}`));
}
