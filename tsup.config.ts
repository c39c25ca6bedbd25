import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Format, type Options } from 'tsup';

const root = dirname(fileURLToPath(import.meta.url));

/**
 * One build recipe for every published package, for Node 20: ESM (`.js`) and CommonJS (`.cjs`)
 * with a declaration file for each (`.d.ts`, `.d.cts`), so `import` and `require` both work and
 * TypeScript sees the same module format as Node. The CLI is a program, not a library: ESM only.
 */
function packageBuild(dir: string, entry: string[], format: Format[] = ['esm', 'cjs']): Options {
  // the config runs from the root, so each package's own dependencies are named here
  const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
  const external = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})];
  const library = format.includes('cjs');
  return {
    name: dir,
    external,
    entry: entry.map((e) => join(root, dir, e)),
    outDir: join(root, dir, 'dist'),
    format,
    // shared modules go to chunks in CJS as in ESM: one copy of each class per format
    splitting: true,
    // `import.meta.url` in CJS output (embedded-postgres.ts resolves its binaries with it)
    shims: library,
    target: 'node20',
    platform: 'node',
    // tsup's declaration build sets `baseUrl`, which TypeScript 6 reports as deprecated
    dts: library ? { compilerOptions: { ignoreDeprecations: '6.0' } } : false,
    sourcemap: true,
    clean: true,
    tsconfig: join(root, 'tsconfig.build.json'),
  };
}

const builds = [
  packageBuild('packages/core', ['src/index.ts', 'src/internal.ts', 'src/testing/index.ts']),
  packageBuild('packages/outbox', ['src/index.ts']),
  packageBuild('packages/adapters-http', ['src/index.ts']),
  packageBuild('packages/adapters-nats', ['src/index.ts']),
  packageBuild('packages/adapters-amqp', ['src/index.ts']),
  packageBuild('packages/dashboard', ['src/index.ts']),
  packageBuild('packages/cli', ['src/main.ts'], ['esm']),
];

// `tsup` at the root builds every package; a package's `prepack` runs it from the package's
// folder (`tsup --config ../../tsup.config.ts`) and builds that package only.
const here = relative(root, process.cwd());
export default defineConfig(here === '' ? builds : builds.filter((b) => b.name === here));
