// The type-level half of the JSON rule (input/json.ts holds the run-time half): a payload type
// whose every part is JSON passes as it is; a part that is not becomes a sentence, so the
// compiler's "does not satisfy the constraint" message names the field and what to pass.

/** A value leasehold stores as JSON and hands back unchanged: what payloads and results are made of. */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [key: string]: JsonValue | undefined };

/**
 * `T` itself when every part of it is JSON (plain objects, arrays, strings, numbers, booleans,
 * null; an optional field may be `undefined`), else `T` with each part that is not replaced by a
 * sentence saying so (`{ when: "a Date is not JSON: pass an ISO string (date.toISOString())" }`).
 * Interfaces pass as well as type aliases; `unknown`, `any` and `object` pass unchecked.
 *
 * @example
 * type Ok = JsonCompatible<{ at: string }>; // { at: string }
 */
export type JsonCompatible<T> = unknown extends T
  ? T
  : T extends string | number | boolean | null | undefined | void
    ? T
    : T extends Date
      ? 'a Date is not JSON: pass an ISO string (date.toISOString())'
      : T extends bigint
        ? 'a bigint is not JSON: pass a string'
        : T extends symbol
          ? 'a symbol is not JSON'
          : T extends (...args: never[]) => unknown
            ? 'a function is not JSON: pass data only'
            : T extends ReadonlyMap<unknown, unknown>
              ? 'a Map is not JSON: pass a plain object or an array of entries'
              : T extends ReadonlySet<unknown>
                ? 'a Set is not JSON: pass an array'
                : T extends RegExp
                  ? 'a RegExp is not JSON: pass a string'
                  : T extends ArrayBufferView | ArrayBuffer
                    ? 'binary data is not JSON: pass a base64 string'
                    : T extends object
                      ? { [K in keyof T]: JsonCompatible<T[K]> }
                      : T;

/**
 * What `defineTask`'s options must also be for a payload type `P`: anything when `P` is JSON,
 * else an object with a property no options have, whose name and type make the compiler's error
 * say which field is not JSON (`Property ''the payload type is not JSON'' is missing … { when: "a
 * Date is not JSON: …" }`). A parameter's type rather than a constraint on `P`, so that
 * `defineTask<unknown>` and payload types inferred from the handler or the validator still work.
 *
 * @example
 * type Ok = JsonPayloadCheck<{ at: string }>; // unknown: any options do
 */
export type JsonPayloadCheck<P> = JsonTypeCheck<P, 'payload'>;

/**
 * {@link JsonPayloadCheck} for any type `T` stored as JSON, named `what` in the error
 * (`the result type is not JSON`): `defineTask` checks its result and checkpoint types with it.
 *
 * @example
 * type Refused = JsonTypeCheck<{ at: Date }, 'result'>; // { 'the result type is not JSON': { at: "a Date is not JSON: …" } }
 */
export type JsonTypeCheck<T, What extends string> = unknown extends T
  ? unknown
  : [T] extends [JsonCompatible<T>]
    ? unknown
    : { [K in `the ${What} type is not JSON`]: JsonCompatible<T> };
