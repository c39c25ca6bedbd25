import { describe, expect, it } from 'vitest';
import { DeferError, LeaseLostError, PayloadValidationError, PermanentError, RetryableError } from './errors.js';
import { classifyOutcome, describeError } from './outcome.js';
import { transitionFor } from './transition-for.js';

describe('classifyOutcome', () => {
  it('nothing thrown is success', () => {
    expect(classifyOutcome(undefined, false)).toEqual({ kind: 'success' });
  });

  it('PermanentError and an invalid payload are permanent', () => {
    expect(classifyOutcome(new PermanentError('422'), true).kind).toBe('permanent');
    expect(classifyOutcome(new PayloadValidationError('t', new Error('bad')), true).kind).toBe('permanent');
  });

  it('DeferError is a defer with its delay and reason', () => {
    expect(classifyOutcome(new DeferError('30s', 'later'), true)).toEqual({ kind: 'defer', delayMs: 30_000, reason: 'later' });
  });

  it('anything else is retryable, with its stack; Retry-After travels along', () => {
    const plain = classifyOutcome(new TypeError('boom'), true);
    expect(plain).toMatchObject({ kind: 'retryable', retryAfterMs: undefined });
    expect(plain.kind === 'retryable' && plain.error.stack).toContain('boom');
    expect(classifyOutcome('a string', true)).toMatchObject({ kind: 'retryable' });
    expect(classifyOutcome(undefined, true)).toMatchObject({ kind: 'retryable' });
    expect(classifyOutcome(new RetryableError('429', { retryAfterMs: 5_000 }), true)).toMatchObject({
      kind: 'retryable',
      retryAfterMs: 5_000,
    });
  });

  it('a lost lease is its own kind, and nothing is written for it', () => {
    const outcome = classifyOutcome(new LeaseLostError('1', 1), true);
    expect(outcome.kind).toBe('lease-lost');
    expect(transitionFor(outcome, { attempts: 1, maxAttempts: 3 }, { backoff: { baseMs: 1, capMs: 1 }, maxDeferAgeMs: null })).toBeNull();
  });
});

describe('transitionFor', () => {
  const policy = { backoff: { baseMs: 1_000, capMs: 60_000 }, maxDeferAgeMs: 86_400_000 };

  it('retryable: back off while attempts remain, dead once exhausted', () => {
    const retry = transitionFor({ kind: 'retryable', error: new Error('x'), retryAfterMs: undefined }, { attempts: 2, maxAttempts: 3 }, policy, () => 0.5);
    expect(retry).toMatchObject({ to: 'pending', delayMs: 2_000, refund: false });
    const dead = transitionFor({ kind: 'retryable', error: new Error('x'), retryAfterMs: undefined }, { attempts: 3, maxAttempts: 3 }, policy);
    expect(dead).toMatchObject({ to: 'dead' });
    expect(dead?.to === 'dead' && dead.error).toMatch(/^retries exhausted: /);
  });

  it('Retry-After is the earliest next attempt', () => {
    const t = transitionFor({ kind: 'retryable', error: new Error('x'), retryAfterMs: 90_000 }, { attempts: 1, maxAttempts: 3 }, policy, () => 0);
    expect(t).toMatchObject({ to: 'pending', delayMs: 90_000 });
  });

  it('defer refunds the attempt and carries the age bound', () => {
    expect(transitionFor({ kind: 'defer', delayMs: 500, reason: 'r' }, { attempts: 1, maxAttempts: 1 }, policy)).toEqual({
      to: 'pending',
      delayMs: 500,
      error: 'deferred: r',
      refund: true,
      maxAgeMs: 86_400_000,
    });
  });
});

describe('describeError (what last_error stores)', () => {
  it('name, code and message, then the causes: never a stack or a file path', () => {
    const socket = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const broker = Object.assign(new Error('no responders', { cause: socket }), { name: 'NatsError', code: 503 });
    const text = describeError(new RetryableError('publish failed', { cause: broker }));
    expect(text).toBe('RetryableError: publish failed; cause: NatsError [503]: no responders; cause: Error: read ECONNRESET');
    expect(text).not.toMatch(/\n|\s+at |\.[cm]?[jt]s\b|node_modules/);
  });

  it('a cause the message already repeats is not said twice; a cycle of causes ends', () => {
    expect(describeError(new PayloadValidationError('t', new Error('bad field')))).toBe('PayloadValidationError: invalid payload for task "t": bad field');
    const loop = new Error('a');
    (loop as { cause?: unknown }).cause = new Error('b', { cause: loop });
    expect(describeError(loop)).toBe('Error: a; cause: Error: b');
  });
});
