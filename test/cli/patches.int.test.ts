// `leasehold patches`, the versions section of `leasehold stats` and the replay failures in
// `leasehold dead list` (issue 31), over rows seeded as the versioned runtime writes them. The
// CLI runs in this process (`run`), as its bin would, minus the spawn.
import { describe, expect, it } from 'vitest';
import { run } from '../../packages/cli/src/run.js';
import { useTestDatabase } from '../fixtures.js';
import { seedMarker, seedNonDeterminismDead, seedRun, seedWorker } from '../workflows/version-seed.js';

const t = useTestDatabase();
const MIN = 60_000;

/** Runs `leasehold <args>` against this file's database; returns its exit code, stdout and stderr. */
async function leasehold(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (text: string) => void out.push(text), err: (text: string) => void err.push(text), isTTY: false, columns: 200 };
  const code = await run(args, { env: { DATABASE_URL: t.url }, io, signal: new AbortController().signal });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('leasehold stats: workflow versions', () => {
  it('shows no versions section while every task runs one version that a live worker accepts', async () => {
    await seedRun(t.db, { name: 'quiet', version: 1 });
    await seedWorker(t.db, 'w-quiet', { quiet: [1] });
    const stats = await leasehold('stats');
    expect(stats.code, stats.err).toBe(0);
    expect(stats.out).not.toContain('VERSION');
    const json = JSON.parse((await leasehold('stats', '--json')).out) as { versions: { versions: unknown[]; workers: unknown[] } };
    expect(json.versions.versions).toEqual([expect.objectContaining({ name: 'quiet', version: 1, pending: 1, acceptedBy: 1 })]);
    expect(json.versions.workers).toEqual([expect.objectContaining({ owner: 'w-quiet', accepts: { quiet: [1] } })]);
  });

  it('shows the versions of a task in flight, flags the one no live worker accepts, and counts replay failures', async () => {
    await seedRun(t.db, { name: 'order', version: 1, status: 'waiting', createdAgoMs: 90 * MIN });
    await seedRun(t.db, { name: 'order', version: 2 });
    await seedRun(t.db, { name: 'order', version: 2, status: 'processing' });
    await seedWorker(t.db, 'w-new', { order: [2] });
    await seedNonDeterminismDead(t.db, 'order', 1);
    const stats = await leasehold('stats');
    expect(stats.code, stats.err).toBe(0);
    expect(stats.out).toMatch(/^TASK\s+VERSION\s+PENDING\s+PROCESSING\s+WAITING\s+DEAD \(REPLAY\)\s+OLDEST\s+LIVE WORKERS ACCEPTING$/m);
    expect(stats.out).toMatch(/^order\s+1\s+0\s+0\s+1\s+1\s+1h 3\dm\s+NONE$/m);
    expect(stats.out).toMatch(/^order\s+2\s+1\s+1\s+0\s+0\s+\S+\s+1$/m);
    expect(stats.out).toMatch(/^quiet\s+1\s+1\s+0\s+0\s+0\s+\S+\s+1$/m);
    expect(stats.out).toContain('! order version 1: no live worker accepts it; its 1 run waits until a worker whose definition accepts version 1 starts');
    expect(stats.out).toContain('! 1 dead run failed replay (NonDeterminismError)');
  });

  it('flags a task name no live worker runs at all (issue 34: such runs stayed pending without a word)', async () => {
    await seedRun(t.db, { name: 'welcome-mial' }); // enqueued under a misspelt name
    await seedRun(t.db, { name: 'welcome-mial' });
    const stats = await leasehold('stats');
    expect(stats.code, stats.err).toBe(0);
    expect(stats.out).toMatch(/^welcome-mial\s+1\s+2\s+0\s+0\s+0\s+\S+\s+NONE$/m);
    expect(stats.out).toContain('! welcome-mial: no live worker runs this task; its 2 runs wait until a worker with "welcome-mial" among its tasks starts (not deployed? the name misspelt?)');
    // a version no worker accepts, of a name a worker runs, keeps its own words
    expect(stats.out).toContain('! order version 1: no live worker accepts it');
    const json = JSON.parse((await leasehold('stats', '--json')).out) as { versions: { versions: { name: string; servedBy: number | null; acceptedBy: number | null }[] } };
    const byName = (name: string) => json.versions.versions.filter((v) => v.name === name).map((v) => [v.acceptedBy, v.servedBy]);
    expect(byName('welcome-mial')).toEqual([[0, 0]]);
    expect(byName('order')).toEqual([[0, 1], [1, 1]]);
  });

  it('dead list marks the runs that failed replay and says how to resume them', async () => {
    const dead = await leasehold('dead', 'list');
    expect(dead.code, dead.err).toBe(0);
    expect(dead.out).toMatch(/^task:\d+\s+order\s+1\s+—\s+[\d-]+ [\d:]+\s+NonDeterminismError: run \d+ at position 2 recorded step "charge" but the code asked for step "reserve"$/m);
    expect(dead.out).toContain('1 of these failed replay (NonDeterminismError)');
    expect(dead.out).toContain('"leasehold dead retry <ids>"');
  });
});

describe('leasehold patches', () => {
  it('prints, per task and patch, the runs on each path, the undecided ones and whether the old branch can go', async () => {
    const oldPath = await seedRun(t.db, { name: 'checkout', status: 'waiting', createdAgoMs: 120 * MIN });
    await seedMarker(t.db, oldPath, 'charge-first', false, 60 * MIN);
    const newPath = await seedRun(t.db, { name: 'checkout', createdAgoMs: 30 * MIN });
    await seedMarker(t.db, newPath, 'charge-first', true, 20 * MIN);
    await seedMarker(t.db, newPath, 'receipt', true, 20 * MIN);
    await seedRun(t.db, { name: 'checkout', createdAgoMs: 5 * MIN }); // after the patch went live: not undecided

    const text = await leasehold('patches', '--task', 'checkout');
    expect(text.code, text.err).toBe(0);
    expect(text.out).toMatch(/^TASK\s+PATCH\s+NEW PATH\s+OLD PATH\s+UNDECIDED\s+FIRST NEW \(UTC\)\s+OLD BRANCH REMOVABLE$/m);
    expect(text.out).toMatch(/^checkout\s+charge-first\s+1\s+1\s+0\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+no$/m);
    // the waiting run and the old-path run were created before receipt was first taken
    expect(text.out).toMatch(/^checkout\s+receipt\s+1\s+0\s+1\s+\S+ \S+\s+no$/m);

    const json = JSON.parse((await leasehold('patches', '--task', 'checkout', '--patch', 'charge-first', '--json')).out) as unknown;
    expect(json).toEqual({
      schema: 'leasehold',
      patches: [{ task: 'checkout', patch: 'charge-first', newPath: 1, oldPath: 1, undecided: 0, firstNewAt: expect.any(String), removable: false }],
    });
  });

  it('counts every unmarked run of a patch no run has reached, and says removable once none is left', async () => {
    const asked = await leasehold('patches', '--task', 'checkout', '--patch', 'gift-wrap', '--json');
    expect(JSON.parse(asked.out)).toMatchObject({ patches: [{ task: 'checkout', patch: 'gift-wrap', newPath: 0, oldPath: 0, undecided: 3, firstNewAt: null, removable: false }] });
    const gone = await leasehold('patches', '--task', 'nothing-runs', '--patch', 'gift-wrap');
    expect(gone.out).toMatch(/^nothing-runs\s+gift-wrap\s+0\s+0\s+0\s+—\s+yes$/m);
    const none = await leasehold('patches', '--patch', 'gift-wrap');
    expect(none.out).toContain('no unfinished run in schema "leasehold" recorded a patch');
  });

  it('takes --task and --patch only where they apply, and not empty', async () => {
    expect((await leasehold('patches', '--patch', '')).code).toBe(2);
    const misplaced = await leasehold('stats', '--task', 'checkout');
    expect(misplaced.code).toBe(2);
    expect(misplaced.err).toContain('option --task does not apply to "leasehold stats"');
    const help = await leasehold('--help');
    expect(help.out).toContain('patches [--task name] [--patch id]');
  });
});
