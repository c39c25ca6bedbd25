// `leasehold schedules`: list, pause and resume the recurring schedules workers declare.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler, defineSchedule, defineTask, scheduleList, type Scheduler } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { cliEnv, runCli } from './run-cli.js';

const t = useTestDatabase();
let env: NodeJS.ProcessEnv;
let scheduler: Scheduler;
const report = defineTask<{ at: string }>('report', { handler: () => {} });

beforeAll(async () => {
  env = cliEnv({ DATABASE_URL: t.url });
  const hourly = defineSchedule('hourly-report', report, { cron: '0 * * * *', payload: (at) => ({ at: at.toISOString() }) });
  const nightly = defineSchedule('nightly-report', report, { cron: '0 3 * * *', timezone: 'Europe/Berlin', payload: (at) => ({ at: at.toISOString() }), catchUp: 2 });
  scheduler = createScheduler({ pool: t.pool, schedules: [hourly, nightly], owner: 'test-scheduler', logger: null });
  await scheduler.start();
});
afterAll(async () => scheduler.stop());

describe('leasehold schedules', () => {
  it('lists every schedule with its cron, time zone, catch-up and state', async () => {
    const listed = await runCli(['schedules'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^SCHEDULE\s+TASK\s+CRON\s+TIME ZONE\s+CATCH UP\s+LAST TICK\s+STATE\s+SEEN BY/);
    expect(lines[1]).toMatch(/^hourly-report\s+report\s+0 \* \* \* \*\s+UTC\s+0\s+\S+\s+running\s+test-scheduler/);
    expect(lines[2]).toMatch(/^nightly-report\s+report\s+0 3 \* \* \*\s+Europe\/Berlin\s+2\s+\S+\s+running\s+test-scheduler/);
    const json = await runCli(['schedules', 'list', '--json'], env);
    expect(JSON.parse(json.stdout)).toMatchObject({
      schema: 'leasehold',
      schedules: [{ name: 'hourly-report', taskName: 'report', alive: true, pausedAt: null }, { name: 'nightly-report', catchUp: 2 }],
    });
  });

  it('stats shows the schedules after the queues, as text and in --json', async () => {
    const text = await runCli(['stats'], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^SCHEDULE\s+TASK\s+CRON/m);
    expect(text.stdout).toMatch(/^nightly-report\s+report\s+0 3 \* \* \*\s+Europe\/Berlin\s+2\s/m);
    const json = await runCli(['stats', '--json'], env);
    expect((JSON.parse(json.stdout) as { schedules: Array<{ name: string }> }).schedules.map((s) => s.name)).toEqual(['hourly-report', 'nightly-report']);
  });

  it('pauses and resumes by name; an unknown name changes nothing and exits 1', async () => {
    const paused = await runCli(['schedules', 'pause', 'hourly-report'], env);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout.trim()).toBe('paused: hourly-report');
    expect((await runCli(['schedules'], env)).stdout).toMatch(/hourly-report\s.*\spaused\s/);
    const again = await runCli(['schedules', 'pause', 'hourly-report', 'nightly-report', '--json'], env);
    expect(JSON.parse(again.stdout)).toEqual({ paused: ['nightly-report'], unchanged: ['hourly-report'] });

    const unknown = await runCli(['schedules', 'resume', 'hourly-report', 'no-such'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no schedule named "no-such"');
    expect((await scheduleList(t.pool, 'leasehold')).every((s) => s.pausedAt !== null)).toBe(true);

    const resumed = await runCli(['schedules', 'resume', 'hourly-report', 'nightly-report'], env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout.trim()).toBe('resumed: hourly-report, nightly-report');
    expect((await scheduleList(t.pool, 'leasehold')).every((s) => s.pausedAt === null)).toBe(true);
  });

  it('refuses pause without names and an unknown subcommand with exit code 2', async () => {
    const bare = await runCli(['schedules', 'pause'], env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('needs schedule names');
    const wrong = await runCli(['schedules', 'delete', 'x'], env);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('list, pause, resume');
  });
});
