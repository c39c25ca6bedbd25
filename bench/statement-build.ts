// What building a hot statement costs in the worker, before it reaches the database: the step
// record a workflow's every `ctx.step` sends (issue 35; `ctx.dbStep`'s, taskStepRecord, is built
// the same way), handed to an executor that answers at once. A measurement, not a test: it
// prints numbers and asserts nothing.
//   npx tsx --conditions=@leasehold/source bench/statement-build.ts
import { taskTable } from '@leasehold/core';
import { taskStepRecordMany } from '@leasehold/core/internal';

const CALLS = 50_000;
const table = taskTable('leasehold');
const answered = { query: async () => ({ rows: [], rowCount: 0 }) };
// a batch as eight running workflows send it: one step each, here four of them
const steps = Array.from({ length: 4 }, (_, i) => ({ taskId: String(1_000 + i), leaseVersion: 1, name: `s${i}`, resultJson: String(i), position: i }));

for (let round = 1; round <= 3; round++) {
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) await taskStepRecordMany(answered as never, table, steps);
  const used = process.cpuUsage(before);
  console.log(`round ${round}: taskStepRecordMany, ${((used.user + used.system) / CALLS).toFixed(2)} µs of CPU per statement (${steps.length} steps)`);
}
