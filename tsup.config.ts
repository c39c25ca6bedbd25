import { readFileSync } from 'node:fs';
import { defineConfig, type Options } from 'tsup';

/** One build recipe for every published package: ESM + .d.ts for Node 20. */
function packageBuild(dir: string, entry: string[] = ['src/index.ts']): Options {
  // the config runs from the root, so each package's own dependencies are named here
  const manifest = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8')) as Record<string, Record<string, string> | undefined>;
  const external = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})];
  return {
    name: dir,
    external,
    entry: entry.map((e) => `${dir}/${e}`),
    outDir: `${dir}/dist`,
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    // tsup's declaration build sets `baseUrl`, which TypeScript 6 reports as deprecated
    dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
    sourcemap: true,
    clean: true,
    tsconfig: 'tsconfig.base.json',
  };
}

export default defineConfig([
  packageBuild('packages/core', ['src/index.ts', 'src/testing/index.ts']),
  packageBuild('packages/outbox'),
  packageBuild('packages/adapters-http'),
  packageBuild('packages/cli', ['src/main.ts']),
]);
