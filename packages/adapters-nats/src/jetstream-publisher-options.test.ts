import { describe, expect, it } from 'vitest';
import { normalizeJetStreamOptions } from './jetstream-publisher-options.js';

describe('jetStreamPublisher options', () => {
  it('has documented defaults', () => {
    const o = normalizeJetStreamOptions({ servers: 'nats://127.0.0.1:4222' });
    expect(o).toMatchObject({ servers: ['nats://127.0.0.1:4222'], timeoutMs: 4_000, connectTimeoutMs: 5_000, streamMissing: 'retryable' });
  });

  it.each([
    [{}, 'servers', /either `servers`/],
    [{ servers: 'nats://a', connection: { request: () => undefined } }, 'servers', /not both/],
    [{ servers: [] }, 'servers', /non-empty/],
    [{ servers: 'nats://a', timeout: -1 }, 'timeout', /timeout/],
    [{ servers: 'nats://a', subject: 'x' }, 'subject', /function/],
    [{ servers: 'nats://a', streamMissing: 'sometimes' }, 'streamMissing', /'retryable' or 'permanent'/],
    [{ servers: 'nats://a', expectStream: 'a.b' }, 'expectStream', /stream name/],
  ])('refuses %j naming `%s`', (options, option, message) => {
    expect(() => normalizeJetStreamOptions(options as never)).toThrow(expect.objectContaining({ code: 'CONFIG', option, message: expect.stringMatching(message) }));
  });
});
