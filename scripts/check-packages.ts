// npm run check:packages — packs every published package as `npm publish` would (prepack
// builds it) into .tmp/packages, then checks each tarball: what it contains, `publint --strict`
// (package.json fields, exports, files) and `attw` (are the types right for `import` and
// `require` under every TypeScript resolution mode). Exits 1 when any check fails.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { packAll, ROOT } from './packages.js';

const license = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
const failures: string[] = [];

for (const tarball of packAll()) {
  const name = basename(tarball);
  console.log(`\n==> ${name}`);
  const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((path) => path.replace(/^package\//, ''));
  const problems = contentProblems(tarball, files);
  for (const problem of problems) failures.push(`${name}: ${problem}`);
  console.log(`contents: ${files.length} files${problems.length ? `; ${problems.join('; ')}` : ', no test files, LICENSE and README present'}`);
  for (const [tool, args] of [
    ['publint', ['publint', 'run', tarball, '--strict']],
    ['attw', ['attw', tarball, '--format', 'ascii']],
  ] as const) {
    const run = spawnSync('npx', ['--no-install', ...args], { cwd: ROOT, stdio: 'inherit' });
    if (run.status !== 0) failures.push(`${name}: ${tool} failed (exit ${run.status})`);
  }
}

if (failures.length > 0) {
  console.error(`\ncheck:packages failed:\n${failures.map((f) => `- ${f}`).join('\n')}`);
  process.exit(1);
}
console.log('\ncheck:packages: every tarball passes publint and attw, with no test files');

function contentProblems(tarball: string, files: string[]): string[] {
  const problems: string[] = [];
  const tests = files.filter((f) => /(^|\/)(test|tests|__tests__)\/|\.(test|spec)\.[cm]?[jt]s$/.test(f));
  if (tests.length > 0) problems.push(`test files: ${tests.join(', ')}`);
  for (const required of ['package.json', 'README.md', 'LICENSE']) {
    if (!files.includes(required)) problems.push(`no ${required}`);
  }
  if (files.includes('LICENSE') && execFileSync('tar', ['-xOzf', tarball, 'package/LICENSE'], { encoding: 'utf8' }) !== license) {
    problems.push('its LICENSE differs from the repository root LICENSE');
  }
  return problems;
}
