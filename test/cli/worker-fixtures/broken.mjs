// defineTask checks its options at import: this module fails to load with a ConfigError.
import { defineTask } from '@leasehold/core';

export const broken = defineTask('cli-broken', { handler: () => {}, lease: 'soon' });
