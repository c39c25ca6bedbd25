#!/usr/bin/env node
// The `leasehold` command. Signal handling lives here, never in the libraries: the first
// SIGINT / SIGTERM asks the running command to stop (a throwaway server is removed); another
// one more than 2 s later ends the process at once. Repeats within 2 s are the same Ctrl-C
// delivered twice (the terminal signals the whole process group, and `npm exec` / `npx`
// forward what they get), so they must not skip the cleanup.
import { processIo } from './io.js';
import { run } from './run.js';

const controller = new AbortController();
let firstAt: number | undefined;
const onSignal = (signal: NodeJS.Signals) => {
  if (firstAt === undefined) {
    firstAt = Date.now();
    controller.abort(new Error(`received ${signal}`));
  } else if (Date.now() - firstAt > 2_000) {
    process.stderr.write(`leasehold: ${signal} again, exiting now\n`);
    process.exit(130);
  }
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
watchParent();

const code = await run(process.argv.slice(2), { env: process.env, io: processIo(), signal: controller.signal });
// Written to a pipe, output is still queued in the process when the command returns, and exit
// drops the queue: `dead list --limit 2000 --json | jq` got the first 64 KiB of 580 KiB.
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
// explicit: a pool timer or a leftover handle must not keep a finished command alive
process.exit(code);

/** Resolves once everything written to `stream` before this call has been handed to the OS. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    // a reader that went away (`| head`) takes no more: nothing is left to wait for
    stream.once('error', () => resolve());
    // writes complete in order: the callback of an empty write runs after every earlier one
    stream.write('', () => resolve());
  });
}

/**
 * Under npm (`npx`, `npm exec`, `npm run`) this process runs below `sh -c`, and where sh is dash
 * (Debian, Ubuntu) a SIGTERM sent to npm ends npm and the shell but never reaches this process:
 * `worker`, `watch` or `dashboard` would run on, orphaned, a worker holding leases nobody can
 * stop. A new parent means whoever started it has gone, so that is treated as the signal it did
 * not pass on (and is only looked for under npm: `nohup leasehold … &` must outlive its shell).
 */
function watchParent(): void {
  if (process.env.npm_command === undefined) return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    if (firstAt !== undefined) return;
    firstAt = Date.now();
    controller.abort(new Error('npm ended without passing its signal on'));
  }, 500);
  // never what keeps a finished command alive
  timer.unref();
}
