import { rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { describe, expect, it } from 'vitest';
import { privateTmpdir, processesMentioning, serverLeftovers } from '../examples/processes.js';
import { cliEnv, exited, outputContains, runCli, startCli } from './run-cli.js';

// --embedded: a throwaway PostgreSQL in a temp folder, removed when the command ends — also on
// Ctrl-C. TMPDIR points the server's folder at a directory of this test's own, to check it.
describe('leasehold --embedded', () => {
  it('runs a command on a throwaway server, migrated, and removes it afterwards', async () => {
    const tmp = privateTmpdir();
    try {
      const result = await runCli(['--embedded', 'stats', '--json'], cliEnv({ TMPDIR: tmp }));
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('(throwaway, --embedded)');
      expect(result.stderr).toContain('stopped and removed the throwaway PostgreSQL');
      expect((JSON.parse(result.stdout) as { tables: Array<{ table: string }> }).tables.map((x) => x.table)).toEqual(['task', 'outbox']);
      expect(serverLeftovers(tmp)).toEqual([]);
      expect(processesMentioning(tmp)).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('watch --embedded ends on Ctrl-C with exit code 0 and leaves no server or folder behind', async () => {
    const tmp = privateTmpdir();
    try {
      const child = startCli(['--embedded', 'watch', '--interval', '500ms'], cliEnv({ TMPDIR: tmp }), { detached: true });
      await outputContains(child, 'EXPIRED LEASES');
      const port = Number(/127\.0\.0\.1:(\d+)/.exec(child.output.stderr)?.[1]);
      expect(serverLeftovers(tmp)).toHaveLength(1); // the running server's folder
      // Ctrl-C: SIGINT to the whole process group, the CLI and its PostgreSQL server alike
      process.kill(-child.pid!, 'SIGINT');
      const result = await exited(child);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('stopped and removed the throwaway PostgreSQL');
      expect(serverLeftovers(tmp)).toEqual([]);
      expect(processesMentioning(tmp)).toEqual([]);
      expect(await accepts(port)).toBe(false);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}
