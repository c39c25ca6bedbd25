#!/usr/bin/env node
// The `leasehold` command: runs the built CLI (dist/main.js, from src/main.ts). This launcher is
// committed, unlike dist/, so that `npm install` in the leasehold repository links the bin
// (npm skips a bin whose file is missing) before the root `prepare` script builds dist/.
import process from 'node:process';

try {
  await import('../dist/main.js');
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('/dist/')) throw error;
  process.stderr.write(`leasehold: this copy is not built (${error.message}).\nIn the leasehold repository, run \`npm run build\` first.\n`);
  process.exit(1);
}
