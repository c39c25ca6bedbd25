// npm run docs:reference — writes docs/reference/, the API reference in Markdown: every public
// entry point of every published package (TypeDoc with typedoc-plugin-markdown; the options are
// typedoc.json's, which fail on an undocumented public name or a broken {@link}), the `leasehold`
// command's --help for @leasehold/cli (it has no JavaScript API), and an index, README.md.
//
// npm run check:reference (CI) generates the same into .tmp/reference and fails when
// docs/reference differs from it, or when typedoc.json's entryPoints are not exactly the public
// entry points the packages' package.json "exports" declare.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { USAGE } from '../packages/cli/src/usage.js';
import { publishedPackages, ROOT } from './packages.js';

const TARGET = join(ROOT, 'docs', 'reference');
const SCRATCH = join(ROOT, '.tmp', 'reference');

/** Exported, but without a semver promise, so not in the reference (README, "Releasing"). */
const UNPROMISED = new Set(['@leasehold/core/internal']);

interface PackageJson {
  readonly name: string;
  readonly description: string;
  readonly exports?: Record<string, string | Record<string, unknown>>;
}

interface EntryPoint {
  /** What an application imports, e.g. `@leasehold/core/testing`. */
  readonly specifier: string;
  /** The source file, relative to the repository root. */
  readonly source: string;
}

interface Package {
  readonly dir: string;
  readonly manifest: PackageJson;
  readonly entryPoints: EntryPoint[];
}

const check = process.argv.includes('--check');
const packages = publishedPackages().map(readPackage);

const options = JSON.parse(readFileSync(join(ROOT, 'typedoc.json'), 'utf8')) as {
  entryPoints: string[];
  packagesRequiringDocumentation: string[];
};
const exported = packages.flatMap((pkg) => pkg.entryPoints.map((entry) => entry.source));
// TypeDoc checks that names are documented only in the packages this lists (by default the one
// package of a single-package project; with several, none)
const documented = packages.filter((pkg) => pkg.entryPoints.length > 0).map((pkg) => pkg.manifest.name);
const mismatches = [
  ...exported.filter((source) => !options.entryPoints.includes(source)).map((source) => `entryPoints misses ${source}`),
  ...options.entryPoints.filter((source) => !exported.includes(source)).map((source) => `entryPoints: ${source} is not a public entry point`),
  ...documented
    .filter((name) => !options.packagesRequiringDocumentation.includes(name))
    .map((name) => `packagesRequiringDocumentation misses ${name}`),
  ...options.packagesRequiringDocumentation
    .filter((name) => !documented.includes(name))
    .map((name) => `packagesRequiringDocumentation: ${name} has no JavaScript API`),
];
if (mismatches.length > 0) {
  fail(
    'typedoc.json must list exactly the public entry points of the packages\' package.json "exports", and their packages:' +
      mismatches.map((mismatch) => `\n- ${mismatch}`).join(''),
  );
}

rmSync(SCRATCH, { recursive: true, force: true });
const typedoc = spawnSync('npx', ['--no-install', 'typedoc', '--out', SCRATCH, '--logLevel', 'Warn'], {
  cwd: ROOT,
  stdio: 'inherit',
});
if (typedoc.status !== 0) {
  fail(`TypeDoc failed (exit ${typedoc.status}): a public name without documentation, a broken {@link}, or a type error`);
}
for (const pkg of packages) {
  if (pkg.entryPoints.length === 0) writeCommandPage(pkg);
}
// replaces TypeDoc's list of modules: one row per package, the CLI included
writeFileSync(join(SCRATCH, 'README.md'), indexPage());
const broken = brokenLinks(SCRATCH);
if (broken.length > 0) fail(`links to nothing in the generated pages:${broken.map((link) => `\n- ${link}`).join('')}`);

if (check) {
  const differences = compareTrees(SCRATCH, TARGET);
  if (differences.length > 0) {
    fail(
      `docs/reference is not what the sources generate (${differences.length === 1 ? "1 file differs" : `${differences.length} files differ`}; run npm run docs:reference and commit it):` +
        differences
          .slice(0, 20)
          .map((difference) => `\n- ${difference}`)
          .join('') +
        (differences.length > 20 ? `\n- … and ${differences.length - 20} more` : ''),
    );
  }
  console.log(`check:reference: docs/reference is current (${listFiles(TARGET).length} files, ${exported.length} entry points)`);
} else {
  rmSync(TARGET, { recursive: true, force: true });
  cpSync(SCRATCH, TARGET, { recursive: true });
  console.log(`docs:reference: wrote ${relative(ROOT, TARGET)} (${listFiles(TARGET).length} files, ${exported.length} entry points)`);
}

function readPackage(dir: string): Package {
  const manifest = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as PackageJson;
  const entryPoints: EntryPoint[] = [];
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    if (subpath === './package.json') continue;
    const specifier = subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`;
    if (UNPROMISED.has(specifier)) continue;
    const source = typeof target === 'object' ? target['@leasehold/source'] : undefined;
    if (typeof source !== 'string') fail(`${dir}/package.json: exports["${subpath}"] has no "@leasehold/source" condition`);
    entryPoints.push({ specifier, source: join(dir, source) });
  }
  return { dir, manifest, entryPoints };
}

/** The folder TypeDoc gives an entry point (typedoc.json: excludeScopesInPaths). */
function folderOf(specifier: string): string {
  return specifier.replace(/^@leasehold\//, '');
}

function writeCommandPage(pkg: Package): void {
  const folder = folderOf(pkg.manifest.name);
  mkdirSync(join(SCRATCH, folder), { recursive: true });
  const page = [
    `[leasehold](../README.md) / ${pkg.manifest.name}`,
    '',
    `# ${pkg.manifest.name}`,
    '',
    `${pkg.manifest.description}`,
    '',
    'It has no JavaScript API (its `exports` hold only `package.json`): it installs the `leasehold`',
    `command. This is \`leasehold --help\`; more in [its README](../../../${pkg.dir}/README.md).`,
    '',
    '```text',
    USAGE.trimEnd(),
    '```',
    '',
  ];
  writeFileSync(join(SCRATCH, folder, 'README.md'), page.join('\n'));
}

function indexPage(): string {
  const rows = packages.map((pkg) => {
    const pages =
      pkg.entryPoints.length > 0
        ? pkg.entryPoints.map((entry) => `[\`${entry.specifier}\`](${folderOf(entry.specifier)}/README.md)`).join(', ')
        : `[the \`leasehold\` command](${folderOf(pkg.manifest.name)}/README.md)`;
    return `| [\`${pkg.manifest.name}\`](../../${pkg.dir}) | ${pages} | ${pkg.manifest.description.replace(/\|/g, '\\|')} |`;
  });
  return [
    '# leasehold API reference',
    '',
    'Every public name of every published package, from the TSDoc comments in the sources. Generated by',
    '`npm run docs:reference` (TypeDoc, `typedoc.json`); CI runs `npm run check:reference`, which fails',
    'when these pages are not what the sources generate, or a public name has no documentation. Do',
    'not edit them by hand.',
    '',
    '| package | entry points | what it is |',
    '| --- | --- | --- |',
    ...rows,
    '',
    '`@leasehold/core/internal` is left out: it is what leasehold\'s own packages share with core, with',
    'no semver promise ([README, "Releasing"](../../README.md#releasing)).',
    '',
  ].join('\n');
}

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/** What differs between the generated tree and the checked-in one, one line per file. */
function compareTrees(generated: string, checkedIn: string): string[] {
  const mine = listFiles(generated);
  const theirs = new Set(listFiles(checkedIn));
  const differences: string[] = [];
  for (const file of mine) {
    if (!theirs.has(file)) differences.push(`missing: docs/reference/${file}`);
    else if (readFileSync(join(generated, file), 'utf8') !== readFileSync(join(checkedIn, file), 'utf8')) {
      differences.push(`stale: docs/reference/${file}`);
    }
    theirs.delete(file);
  }
  for (const file of theirs) differences.push(`no longer generated: docs/reference/${file}`);
  return differences;
}

/** Relative links (to a page, or to the repository's files) whose target does not exist. */
function brokenLinks(dir: string): string[] {
  const broken: string[] = [];
  for (const file of listFiles(dir)) {
    for (const match of readFileSync(join(dir, file), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = match[1] ?? '';
      const path = link.split('#')[0] ?? '';
      if (path === '' || /^[a-z]+:/i.test(path)) continue;
      // read where the page will be, docs/reference; a page it links to is in what was generated
      const target = resolve(TARGET, dirname(file), path);
      const inside = relative(TARGET, target);
      const exists = inside.startsWith('..') ? existsSync(target) : existsSync(join(dir, inside));
      if (!exists) broken.push(`docs/reference/${file}: ${link}`);
    }
  }
  return broken;
}

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}
