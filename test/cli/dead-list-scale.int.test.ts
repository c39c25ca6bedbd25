// A command's whole result reaches a pipe, however long it is: the CLI used to exit while a pipe
// still had output queued, so `leasehold dead list --limit 2000 --json | jq` got the first
// 64-128 KiB of a 580 KiB document (invalid JSON), and `dead retry --all --json` lost the ids.
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { cliEnv, runCli } from './run-cli.js';

const t = useTestDatabase();
let env: NodeJS.ProcessEnv;
beforeAll(() => void (env = cliEnv({ DATABASE_URL: t.url })));

const DEAD = 2_000;

describe('dead list at production sizes', () => {
  it(`prints all ${DEAD.toLocaleString('en')} dead messages asked for to a pipe`, async () => {
    await sql`TRUNCATE leasehold.outbox, leasehold.outbox_group`.execute(t.db);
    // a payload and an error of the size real ones have: about 300 bytes of output per row
    await sql`
      INSERT INTO leasehold.outbox (aggregate_type, aggregate_id, event_type, payload, status, attempts, last_error)
      SELECT 'order', g::text, 'OrderPaid', jsonb_build_object('orderId', g, 'note', repeat('x', 120)), 'dead', 12,
             'HTTP 503 Service Unavailable: ' || repeat('y', 60)
      FROM generate_series(1, ${DEAD}::int) AS g`.execute(t.db);
    const result = await runCli(['dead', 'list', '--table', 'outbox', '--limit', String(DEAD), '--json'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.length).toBeGreaterThan(256 * 1024);
    const report = JSON.parse(result.stdout) as { dead: Array<{ ref: string }>; truncated: string[] };
    expect(report.dead).toHaveLength(DEAD);
    expect(report.truncated).toEqual([]);
  });
});
