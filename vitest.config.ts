import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests import the packages' TypeScript sources (what the "@leasehold/source" export condition
// points at), so nothing needs a build first.
const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const alias = [
  { find: /^@leasehold\/core$/, replacement: source('./packages/core/src/index.ts') },
  { find: /^@leasehold\/core\/testing$/, replacement: source('./packages/core/src/testing/index.ts') },
  { find: /^@leasehold\/core\/internal$/, replacement: source('./packages/core/src/internal.ts') },
  { find: /^@leasehold\/outbox$/, replacement: source('./packages/outbox/src/index.ts') },
  { find: /^@leasehold\/adapters-http$/, replacement: source('./packages/adapters-http/src/index.ts') },
  { find: /^@leasehold\/adapters-nats$/, replacement: source('./packages/adapters-nats/src/index.ts') },
  { find: /^@leasehold\/adapters-amqp$/, replacement: source('./packages/adapters-amqp/src/index.ts') },
  { find: /^@leasehold\/dashboard$/, replacement: source('./packages/dashboard/src/index.ts') },
];

export default defineConfig({
  resolve: { alias },
  test: {
    allowOnly: false,
    // Vitest runs one file at a time on two cores (its default: the cores less one). Most
    // integration files wait on leases, timers and the server rather than the CPU, so one file
    // at a time left a core idle: the PostgreSQL 15 pass took 20 minutes of CI's 33.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['packages/*/src/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
