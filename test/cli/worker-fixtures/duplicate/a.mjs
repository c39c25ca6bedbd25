import { defineTask } from '@leasehold/core';

export const first = defineTask('cli-dup', { handler: () => {} });
