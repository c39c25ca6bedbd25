// A scheduler process for schedules.int.test.ts: runs the every-second schedule `tick` (and,
// with a third argument, the catch-up schedule) until SIGTERM, then stops it and exits.
import pg from 'pg';
import { createScheduler, defineSchedule, defineTask } from '@leasehold/core';

const pool = new pg.Pool({ connectionString: process.argv[2], max: 2 });
const tick = defineTask<{ at: string }>('tick', { handler: () => {} });
const everySecond = defineSchedule('every-second', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }) });
const scheduler = createScheduler({ pool, schedules: [everySecond], owner: `child-${process.pid}`, logger: null });
scheduler.on('schedule:fired', ({ tick: at }) => process.stdout.write(`fired ${at.toISOString()}\n`));
await scheduler.start();
process.stdout.write('started\n');
process.once('SIGTERM', () => {
  void scheduler.stop().then(() => pool.end()).then(() => process.exit(0));
});
