import { defineTask } from '@leasehold/core';

export const second = defineTask('cli-dup', { handler: () => {} });
