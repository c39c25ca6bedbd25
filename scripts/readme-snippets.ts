// Code blocks in the READMEs that are copies of runnable files, so the documented code is the
// tested code. A block is marked by the comment line `<!-- snippet: <path from the repo root> -->`
// right above its fence. `tsx scripts/readme-snippets.ts` rewrites the blocks from the files;
// `--check` (CI) fails when one differs.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { publishedPackages, ROOT } from './packages.js';

const MARKED_BLOCK = /(<!-- snippet: (\S+) -->\n```(\w*)\n)([\s\S]*?)(```)/g;
const check = process.argv.includes('--check');
let stale = 0;

for (const readme of ['README.md', ...publishedPackages().map((dir) => join(dir, 'README.md'))]) {
  const path = join(ROOT, readme);
  if (!existsSync(path)) continue;
  const text = readFileSync(path, 'utf8');
  const updated = text.replace(MARKED_BLOCK, (_block, opening: string, file: string, _lang: string, body: string, closing: string) => {
    const source = readFileSync(join(ROOT, file), 'utf8');
    if (source !== body) {
      stale++;
      console.log(`${readme}: the block of ${file} ${check ? 'differs from the file' : 'rewritten from the file'}`);
    }
    return `${opening}${source}${closing}`;
  });
  if (!check && updated !== text) writeFileSync(path, updated);
}

if (check && stale > 0) {
  console.error('README code blocks are stale: run `npx tsx scripts/readme-snippets.ts`');
  process.exit(1);
}
