// CommonJS, and a schedule whose task is not exported: the worker runs that task too.
/* global require, module */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defineSchedule, defineTask } = require('@leasehold/core');

const tick = defineTask('cli-tick', { handler: () => {} });

module.exports = {
  everySecond: defineSchedule('cli-every-second', tick, { cron: '* * * * * *', payload: {} }),
};
