// Runs the `leasehold` CLI from source as a child process, the way a user's shell would.
import { spawn, type ChildProcess } from 'node:child_process';

/** What a finished CLI process left behind. */
export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const ARGS = ['--conditions=@leasehold/source', '--import', 'tsx', 'packages/cli/src/main.ts'];

/** The CLI's environment: the test's, minus DATABASE_URL unless given. */
export function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: undefined, ...extra };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  return env;
}

/**
 * Starts the CLI; stdout and stderr are collected as text. `detached` makes it the leader of a
 * process group of its own, so that `process.kill(-pid, 'SIGINT')` reaches it and everything it
 * started at once, as Ctrl-C in a terminal does.
 */
export function startCli(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  { detached = false }: { detached?: boolean } = {},
): ChildProcess & { output: { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, [...ARGS, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'], detached });
  const output = { stdout: '', stderr: '' };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  return Object.assign(child, { output });
}

/** Waits for a started CLI to exit. */
export function exited(child: ReturnType<typeof startCli>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, ...child.output }));
  });
}

/** Runs the CLI to completion. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return exited(startCli(args, env));
}

/** Resolves once the child's stdout contains `text`; rejects if it exits first or after `ms`. */
export function outputContains(child: ReturnType<typeof startCli>, text: string, ms = 45_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`no "${text}" on stdout within ${ms} ms; stderr: ${child.output.stderr}`)), ms);
    const onData = () => child.output.stdout.includes(text) && finish();
    const onExit = () => finish(new Error(`exited before printing "${text}": ${child.output.stderr}`));
    function finish(error?: Error) {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve();
    }
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
    onData();
  });
}
