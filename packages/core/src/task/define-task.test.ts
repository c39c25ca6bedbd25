import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import { defineTask } from './define-task.js';

const handler = () => undefined;

describe('defineTask versions', () => {
  it('runs version 1 alone by default, and its own version with the ones it accepts, ascending', () => {
    expect(defineTask('a', { handler })).toMatchObject({ version: 1, runsVersions: [1] });
    expect(defineTask('a', { handler, version: 3, accepts: [1, 2, 3] })).toMatchObject({ version: 3, runsVersions: [1, 2, 3] });
    expect(defineTask('a', { handler, version: 2, accepts: [1] }).runsVersions).toEqual([1, 2]);
  });

  it.each([
    ['version', { version: 0 }],
    ['version', { version: 1.5 }],
    ['version', { version: '2' }],
    ['accepts', { accepts: 1 }],
    ['accepts[1]', { accepts: [1, -1] }],
    ['accepts[0]', { accepts: [Number.NaN] }],
  ])('refuses a bad `%s` with a ConfigError naming it', (option, options) => {
    const error = (() => {
      try {
        defineTask('a', { handler, ...(options as object) });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).option).toBe(option);
  });
});
