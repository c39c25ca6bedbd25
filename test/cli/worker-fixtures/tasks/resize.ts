// A TypeScript task module: loaded when the CLI runs under a TypeScript loader (the tests run it under tsx).
import { defineTask } from '@leasehold/core';

export const resize = defineTask<{ width: number }>('cli-resize', {
  handler: async ({ width }) => ({ width: width * 2 }),
});
