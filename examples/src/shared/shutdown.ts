/** Repeats of a signal this soon after the first are the same Ctrl-C delivered twice. */
const SAME_SIGNAL_MS = 2_000;

/**
 * Signal handling for an example program (libraries never install signal handlers): the first
 * Ctrl-C (SIGINT) or SIGTERM aborts the returned signal, so the program stops its workers and
 * removes a throwaway database; another one, later, exits at once.
 *
 * One Ctrl-C often arrives twice: the terminal sends it to the whole process group, and
 * `npm run` forwards the one it got to its child as well. Repeats within 2 s are ignored, so a
 * single Ctrl-C never skips the cleanup.
 */
export function shutdownSignal(): AbortSignal {
  const controller = new AbortController();
  let firstAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (firstAt === undefined) {
      firstAt = Date.now();
      process.stderr.write(`\n${signal}: stopping and cleaning up (press Ctrl-C again in 2 s to force)…\n`);
      controller.abort(new Error(`received ${signal}`));
    } else if (Date.now() - firstAt > SAME_SIGNAL_MS) {
      process.stderr.write(`\n${signal} again: exiting now, without cleaning up\n`);
      process.exit(130);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return controller.signal;
}
