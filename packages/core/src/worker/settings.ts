import { DEFAULT_BACKOFF, type BackoffPolicy } from '../backoff.js';
import { MAX_DELAY_MS, parseDuration, type Duration } from '../duration.js';
import { ConfigError } from '../errors.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import type { RetryPolicy } from '../transition-for.js';

/** How one task is run: its lease, its time limit and its retry policy. */
export interface RunSettings {
  readonly leaseMs: number;
  /** Null: no limit (the heartbeat keeps the lease). */
  readonly handlerTimeoutMs: number | null;
  readonly policy: RetryPolicy;
}

/** Per-task run options, as users write them. */
export interface RunOptions {
  /** Lease per claim; the heartbeat renews it while the handler runs. @defaultValue '60s' */
  lease?: Duration;
  /** Abort the handler after this long (a retryable failure). Must be shorter than `lease`. @defaultValue none */
  handlerTimeout?: Duration;
  /** Full-jitter backoff bounds for retryable failures. @defaultValue base 1 s, cap 5 min */
  backoff?: { base?: Duration; cap?: Duration };
  /** A deferral that would make the task older than this sends it dead instead. @defaultValue '7d' */
  maxDeferAge?: Duration;
}

const BACKOFF_OPTIONS = optionKeys<NonNullable<RunOptions['backoff']>>()('`backoff`', ['base', 'cap'], { max: 'the most is `cap`', min: 'the least is `base`' });

/** Checks and normalises {@link RunOptions}; throws a `ConfigError` naming the option. */
export function runSettings(options: RunOptions, prefix = ''): RunSettings {
  const name = (option: string) => `${prefix}${option}`;
  const leaseMs = parseDuration(options.lease ?? '60s', name('lease'));
  const handlerTimeoutMs =
    options.handlerTimeout === undefined ? null : parseDuration(options.handlerTimeout, name('handlerTimeout'));
  if (handlerTimeoutMs !== null && handlerTimeoutMs >= leaseMs) {
    throw new ConfigError(
      name('handlerTimeout'),
      `Expected \`${name('handlerTimeout')}\` (${handlerTimeoutMs} ms) to be shorter than \`${name('lease')}\` (${leaseMs} ms)`,
    );
  }
  checkOptionKeys(options.backoff, BACKOFF_OPTIONS, name('backoff.'), '`backoff`');
  const backoff: BackoffPolicy = {
    baseMs: options.backoff?.base === undefined ? DEFAULT_BACKOFF.baseMs : parseDuration(options.backoff.base, name('backoff.base'), { max: MAX_DELAY_MS }),
    capMs: options.backoff?.cap === undefined ? DEFAULT_BACKOFF.capMs : parseDuration(options.backoff.cap, name('backoff.cap'), { max: MAX_DELAY_MS }),
  };
  const maxDeferAgeMs = parseDuration(options.maxDeferAge ?? '7d', name('maxDeferAge'), { max: MAX_DELAY_MS });
  return Object.freeze({ leaseMs, handlerTimeoutMs, policy: Object.freeze({ backoff, maxDeferAgeMs }) });
}
