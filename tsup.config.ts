import { defineConfig, type Options } from 'tsup';

/** One build recipe for every published package: ESM + .d.ts for Node 20. */
function packageBuild(dir: string, entry: string[] = ['src/index.ts']): Options {
  return {
    name: dir,
    entry: entry.map((e) => `${dir}/${e}`),
    outDir: `${dir}/dist`,
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    dts: { compilerOptions: { customConditions: [] } },
    sourcemap: true,
    clean: true,
    tsconfig: 'tsconfig.base.json',
  };
}

export default defineConfig([
  packageBuild('packages/core', ['src/index.ts', 'src/testing/index.ts']),
  packageBuild('packages/outbox'),
  packageBuild('packages/adapters-http'),
]);
