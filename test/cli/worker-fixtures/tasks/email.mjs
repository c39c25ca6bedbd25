// A task module as a newcomer writes it: plain JavaScript, a named export per task.
import { defineTask } from '@leasehold/core';

export const sendEmail = defineTask('cli-email', {
  handler: async ({ to }) => ({ sent: to }),
});

// neither is a definition: ignored
export const retries = 3;
export function helper() {}
