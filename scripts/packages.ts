// The published packages and their tarballs, for check-packages.ts and consumer-test.ts.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..');

/** Where `npm run check:packages` leaves the tarballs (`.tmp/` is git-ignored). */
export const TARBALLS = join(ROOT, '.tmp', 'packages');

export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly devDependencies?: Record<string, string>;
  readonly workspaces?: string[];
}

export function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** Workspace folders of the packages that are published (not `private`). */
export function publishedPackages(): string[] {
  return (readManifest(ROOT).workspaces ?? []).filter((dir) => !readManifest(join(ROOT, dir)).private);
}

/**
 * `npm pack`s every published package into `dest` (emptied first), as `npm publish` would:
 * each package's `prepack` builds it. Returns the tarballs' paths.
 */
export function packAll(dest: string = TARBALLS): string[] {
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  const workspaces = publishedPackages().flatMap((dir) => ['--workspace', dir]);
  // stdout (npm's file lists, the builds' progress) is noise here; errors go to stderr
  execFileSync('npm', ['pack', ...workspaces, '--pack-destination', dest, '--silent'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return tarballsIn(dest);
}

/** The `.tgz` files in `dir`. */
export function tarballsIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.tgz'))
    .sort()
    .map((name) => join(dir, name));
}
