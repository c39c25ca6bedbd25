import type { SpanKind as OtelSpanKind } from '@opentelemetry/api';
import { otel, otelProviderRegistered } from './otel-api.js';

/** Span attributes: OpenTelemetry's attribute values, without depending on its types. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** The kinds of span leasehold records (OpenTelemetry's, by name). */
export type SpanKindName = 'producer' | 'consumer' | 'client' | 'server' | 'internal';

/** Where a span comes from and what it says. */
export interface SpanOptions {
  readonly kind: SpanKindName;
  readonly attributes?: SpanAttributes;
  /**
   * Trace context headers (`traceparent`, `tracestate`) of the work that caused this: the span
   * becomes its child. Without them the span is a child of the active context.
   */
  readonly parentHeaders?: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** With `parentHeaders`: a span already active wins, the headers are the fallback. @defaultValue false */
  readonly preferActive?: boolean;
}

/** What a running span offers the code inside it. */
export interface SpanHandle {
  /** Adds attributes after the start (an outcome, a delay). */
  setAttributes(attributes: SpanAttributes): void;
  /** Records an error on the span and marks it failed; `outcome` says what leasehold did about it. */
  fail(error: Error, outcome: string): void;
}

const NO_SPAN: SpanHandle = { setAttributes: () => undefined, fail: () => undefined };

/**
 * Runs `fn` inside a new span named `name` from the `leasehold` tracer (its context active, so
 * spans the code makes are its children, and `currentTraceHeaders` carries it on), and ends the
 * span when `fn` settles: failed with the error when it throws. Without OpenTelemetry, or without
 * a tracer or meter provider registered, it just runs `fn`.
 * @internal
 */
export async function withSpan<T>(name: string, options: SpanOptions, fn: (span: SpanHandle) => Promise<T>): Promise<T> {
  // With no provider registered a span records nothing: the API is not even loaded (as at a
  // worker's start). Loading it cost a fresh worker process's first workflow step 30-110 ms, paid
  // at the first wake of a run that sleeps before its first step.
  if (!otelProviderRegistered()) return fn(NO_SPAN);
  const api = await otel();
  if (api === null) return fn(NO_SPAN);
  const active = api.context.active();
  const useHeaders = options.parentHeaders !== undefined && !(options.preferActive && api.trace.getSpan(active)?.spanContext().traceId);
  const parent = useHeaders ? api.propagation.extract(active, flatten(options.parentHeaders!)) : active;
  const span = api.trace.getTracer('leasehold').startSpan(name, { kind: kindOf(api.SpanKind, options.kind), attributes: options.attributes }, parent);
  let failed = false;
  const handle: SpanHandle = {
    setAttributes: (attributes) => void span.setAttributes(attributes),
    fail: (error, outcome) => {
      failed = true;
      span.recordException(error);
      span.setAttributes({ 'leasehold.outcome': outcome, 'error.type': error.name });
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: error.message });
    },
  };
  try {
    return await api.context.with(api.trace.setSpan(parent, span), () => fn(handle));
  } catch (error) {
    if (!failed) handle.fail(error instanceof Error ? error : new Error(String(error)), 'error');
    throw error;
  } finally {
    span.end();
  }
}

function kindOf(kinds: typeof OtelSpanKind, name: SpanKindName): OtelSpanKind {
  return { producer: kinds.PRODUCER, consumer: kinds.CONSUMER, client: kinds.CLIENT, server: kinds.SERVER, internal: kinds.INTERNAL }[name];
}

// node:http gives repeated headers as arrays; a propagator wants one string per name
function flatten(headers: Readonly<Record<string, string | readonly string[] | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string') out[name.toLowerCase()] = value;
    else if (Array.isArray(value) && typeof value[0] === 'string') out[name.toLowerCase()] = value[0];
  }
  return out;
}
