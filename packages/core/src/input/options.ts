import { ConfigError } from '../leasehold-error.js';

// Every public options object is checked for keys it does not know, with one helper, so that a
// misspelt or misplaced option (`createWorker({ lease: '10s' })`) is a ConfigError rather than a
// setting silently ignored. The key lists are typed against the options' own types
// (`optionKeys<WorkerOptions>()(…)` does not compile while a key is missing), so an option added
// to a type and forgotten here cannot be refused.

/** The keys one options object may have, made by {@link optionKeys}. @internal */
export interface KnownOptions {
  /** The call, as messages name it: `createWorker`, `defineTask "send-email"`, `enqueue`. */
  readonly what: string;
  readonly keys: ReadonlySet<string>;
  /** Why a key that belongs elsewhere is refused here: `lease` → `lease belongs on defineTask …`. */
  readonly hints: Readonly<Record<string, string>>;
}

type KeysOf<T> = T extends unknown ? Extract<keyof T, string> : never;

/**
 * The keys of an options type `T` as a {@link KnownOptions}; the list must name every key of `T`
 * (a missing one is a compile error naming it). `hints` explain keys that belong elsewhere.
 * @internal
 *
 * @example
 * const WORKER_OPTIONS = optionKeys<WorkerOptions>()('createWorker', ['pool', 'tasks', …], { lease: 'lease belongs on defineTask' });
 */
export function optionKeys<T>() {
  return <const K extends readonly KeysOf<T>[]>(
    what: string,
    keys: K & ([Exclude<KeysOf<T>, K[number]>] extends [never] ? unknown : { missing: Exclude<KeysOf<T>, K[number]> }),
    hints: Readonly<Record<string, string>> = {},
  ): KnownOptions => Object.freeze({ what, keys: new Set<string>(keys), hints: Object.freeze({ ...hints }) });
}

/**
 * Throws a `ConfigError` for the first key of `options` that `known` does not list, naming it
 * (under `prefix`: `retention.`, `items[3].`) and the call (`what`, by default `known`'s), suggesting the nearest known key when one is close
 * (at most two edits) and adding `known`'s hint for it. Does nothing for `undefined` and for
 * values that are not objects (the option checks that follow report those). One pass over the
 * keys, no allocation unless one is refused: cheap enough for every `enqueue`.
 * @internal
 *
 * @example
 * checkOptionKeys(options, WORKER_OPTIONS);
 */
export function checkOptionKeys(options: unknown, known: KnownOptions, prefix = '', what = known.what): void {
  const key = unknownKey(options, known);
  if (key !== undefined) throw unknownOption(key, known, prefix, what);
}

/** The first key of `options` that `known` does not list, or undefined. @internal */
export function unknownKey(options: unknown, known: KnownOptions): string | undefined {
  if (typeof options !== 'object' || options === null) return undefined;
  for (const key in options) {
    if (!known.keys.has(key)) return key;
  }
  return undefined;
}

/** The `ConfigError` of {@link checkOptionKeys} for `key`. @internal */
export function unknownOption(key: string, known: KnownOptions, prefix = '', what = known.what): ConfigError {
  const shown = key.length > 60 ? `${key.slice(0, 60)}…` : key;
  const near = nearestKey(key, known.keys);
  const hint = Object.hasOwn(known.hints, key) ? known.hints[key] : undefined;
  const valid = [...known.keys].sort().join(', ');
  const message =
    `unknown option \`${prefix}${shown}\` for ${what}` +
    (near === undefined ? '' : `; did you mean \`${prefix}${near}\`?`) +
    (hint === undefined ? '' : ` (${hint})`) +
    (near === undefined && hint === undefined ? `. Valid options: ${valid}` : '');
  return new ConfigError(`${prefix}${key}`, message);
}

/** The known key closest to `key` within two edits (case ignored), or undefined. @internal */
export function nearestKey(key: string, keys: Iterable<string>): string | undefined {
  if (key.length > 64) return undefined;
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of keys) {
    const d = editDistance(lower, candidate.toLowerCase(), bestDistance);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

// Levenshtein distance with adjacent transpositions counted as one edit, giving up (returning
// `limit`) once it cannot be below `limit`
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let before = new Array<number>(b.length + 1);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      current.push(d);
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin >= limit) return limit;
    before = previous;
    previous = current;
  }
  return Math.min(previous[b.length]!, limit);
}
