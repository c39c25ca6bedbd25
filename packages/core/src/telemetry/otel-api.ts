import type * as OtelApi from '@opentelemetry/api';

/** The OpenTelemetry API, as the application installed it. */
export type Otel = typeof OtelApi;

let loading: Promise<Otel | null> | undefined;
let loaded: Otel | null | undefined;

/**
 * The `@opentelemetry/api` package when the application has it (an optional peer dependency),
 * else null. Loaded once; afterwards {@link otelNow} answers without a promise. Without an SDK
 * registered the API is a no-op: nothing is recorded and a call costs a function call.
 * @internal
 */
export function otel(): Promise<Otel | null> {
  loading ??= import('@opentelemetry/api').then(
    (api: Otel) => (loaded = api),
    () => (loaded = null),
  );
  return loading;
}

/** {@link otel} once it has loaded: the API, null without it, undefined before the first load. @internal */
export function otelNow(): Otel | null | undefined {
  return loaded;
}

// where every copy of the API of major version 1 keeps what was registered through it
const GLOBAL_KEY = Symbol.for('opentelemetry.js.api.1');

/**
 * Whether a tracer or meter provider is registered with the OpenTelemetry API, read from the
 * API's global registration without importing it: a worker without an SDK then never loads the
 * package (some 30 ms of CPU at start, most of it compiling its modules).
 * @internal
 */
export function otelProviderRegistered(): boolean {
  const registered = (globalThis as Record<symbol, { trace?: unknown; metrics?: unknown } | undefined>)[GLOBAL_KEY];
  return registered?.trace !== undefined || registered?.metrics !== undefined;
}
