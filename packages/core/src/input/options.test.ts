import { describe, expect, it } from 'vitest';
import { ConfigError } from '../leasehold-error.js';
import { checkOptionKeys, nearestKey, optionKeys } from './options.js';

interface Example {
  pool: object;
  concurrency?: number;
  pollInterval?: string;
  listen?: boolean;
}
const EXAMPLE = optionKeys<Example>()('createExample', ['pool', 'concurrency', 'pollInterval', 'listen'], {
  lease: 'lease belongs on defineTask',
});

function refusal(options: unknown, prefix?: string): ConfigError | undefined {
  try {
    checkOptionKeys(options, EXAMPLE, prefix);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  return undefined;
}

describe('checkOptionKeys', () => {
  it('passes the known keys, undefined-valued ones included, and leaves non-objects to the checks that follow', () => {
    for (const options of [{}, { pool: {}, concurrency: 2 }, { pool: {}, listen: undefined }, undefined, null, 'x', 3]) {
      expect(refusal(options)).toBeUndefined();
    }
  });

  it('refuses an unknown key with a ConfigError naming it and the call, suggesting a near key', () => {
    const error = refusal({ pool: {}, concurency: 4 });
    expect(error?.code).toBe('CONFIG');
    expect(error?.option).toBe('concurency');
    expect(error?.message).toBe('unknown option `concurency` for createExample; did you mean `concurrency`?');
    expect(refusal({ pollinterval: '1s' })?.message).toContain('did you mean `pollInterval`?');
    expect(refusal({ lsiten: true })?.message).toContain('did you mean `listen`?'); // a transposition is one edit
  });

  it('adds the hint of a key that belongs elsewhere, and lists the valid keys when nothing is near', () => {
    expect(refusal({ pool: {}, lease: '10s' })?.message).toBe('unknown option `lease` for createExample (lease belongs on defineTask)');
    expect(refusal({ somethingElse: 1 })?.message).toBe(
      'unknown option `somethingElse` for createExample. Valid options: concurrency, listen, pollInterval, pool',
    );
  });

  it('names a nested key under its prefix', () => {
    expect(refusal({ concurrenci: 1 }, 'retention.')).toMatchObject({ option: 'retention.concurrenci', message: expect.stringContaining('`retention.concurrency`') as unknown });
  });

  it('suggests only within two edits', () => {
    expect(nearestKey('pol', ['pool'])).toBe('pool');
    expect(nearestKey('leases', ['lease', 'listen'])).toBe('lease');
    expect(nearestKey('timeout', ['lease', 'listen'])).toBeUndefined();
    expect(nearestKey('x'.repeat(1_000), ['pool'])).toBeUndefined();
  });
});

// the key list must name every key of the type: a missing one does not compile
// @ts-expect-error -- `listen` is missing
optionKeys<Example>()('createExample', ['pool', 'concurrency', 'pollInterval']);
// @ts-expect-error -- and a key the type does not have is refused
optionKeys<Example>()('createExample', ['pool', 'concurrency', 'pollInterval', 'listen', 'lease']);
