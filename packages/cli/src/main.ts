#!/usr/bin/env node
// The `leasehold` command. Signal handling lives here, never in the libraries: the first
// SIGINT / SIGTERM asks the running command to stop (a throwaway server is removed); a second
// one ends the process at once.
import { processIo } from './io.js';
import { run } from './run.js';

const controller = new AbortController();
let signals = 0;
const onSignal = (signal: NodeJS.Signals) => {
  signals++;
  if (signals > 1) {
    process.stderr.write(`leasehold: ${signal} again, exiting now\n`);
    process.exit(130);
  }
  controller.abort(new Error(`received ${signal}`));
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const code = await run(process.argv.slice(2), { env: process.env, io: processIo(), signal: controller.signal });
// explicit: a pool timer or a leftover handle must not keep a finished command alive
process.exit(code);
