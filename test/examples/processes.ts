// Helpers for tests that run programs as child processes and check what they leave behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What a finished program left behind. */
export interface ProgramResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A started program whose output is being collected. */
export type StartedProgram = ChildProcess & { readonly output: { stdout: string; stderr: string } };

/**
 * Starts a TypeScript program from source (`node --conditions=@leasehold/source --import tsx`).
 * `detached` makes it the leader of a process group of its own, so `process.kill(-pid, …)`
 * reaches it and everything it started, as Ctrl-C in a terminal does.
 */
export function startProgram(file: string, env: NodeJS.ProcessEnv, { detached = false }: { detached?: boolean } = {}): StartedProgram {
  const child = spawn(process.execPath, ['--conditions=@leasehold/source', '--import', 'tsx', file], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  return Object.assign(child, { output });
}

/** Waits for a started program to exit. */
export function finished(child: StartedProgram): Promise<ProgramResult> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, ...child.output }));
  });
}

/** Runs a TypeScript program from source to its end. */
export function runProgram(file: string, env: NodeJS.ProcessEnv): Promise<ProgramResult> {
  return finished(startProgram(file, env));
}

/** Resolves once the program's stdout matches `pattern`; rejects if it exits first or after `ms`. */
export async function printed(child: StartedProgram, pattern: RegExp, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pattern.test(child.output.stdout)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited before printing ${pattern}: ${child.output.stderr}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} within ${ms} ms: ${child.output.stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The test's environment with `DATABASE_URL` set to `url`, or removed when `url` is undefined. */
export function envWith(url: string | undefined, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  if (url === undefined) delete env.DATABASE_URL;
  else env.DATABASE_URL = url;
  return env;
}

/**
 * A fresh temp folder to use as a child's TMPDIR, so that whatever it creates there (the
 * throwaway server's `leasehold-pg-*` folder) can be checked afterwards. Mode 755: as root,
 * the server runs as the `postgres` user and must enter it.
 */
export function privateTmpdir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lh-test-tmp-'));
  chmodSync(dir, 0o755);
  return dir;
}

/** Throwaway-server leftovers under `dir`: data folders and password files. */
export function serverLeftovers(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.startsWith('leasehold-pg-') || name.startsWith('pg-password-'));
}

/** Command lines of running processes that mention `dir` (a postgres started with a data folder there). */
export function processesMentioning(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmdline.includes(dir) && cmdline.includes('postgres')) found.push(`${pid}: ${cmdline}`);
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}
