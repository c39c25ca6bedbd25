import { otel, otelNow } from './otel-api.js';

/** W3C trace context headers: what {@link currentTraceHeaders} writes and `withSpan` reads. */
export const TRACE_HEADERS = ['traceparent', 'tracestate'] as const;

/** A W3C trace context as stored with a task: `traceparent`, and `tracestate` when set. */
export interface TraceContext {
  readonly traceparent: string;
  readonly tracestate: string | null;
}

/**
 * The active trace context as W3C headers (`traceparent`, and `tracestate` when set), through the
 * application's registered propagator; `{}` without OpenTelemetry, without an SDK, or outside a
 * span. What `outbox.add` stores with an event, what publishers send downstream.
 * @internal
 */
export async function currentTraceHeaders(): Promise<Record<string, string>> {
  const api = await otel();
  if (api === null) return {};
  const carrier: Record<string, string> = {};
  api.propagation.inject(api.context.active(), carrier);
  const out: Record<string, string> = {};
  for (const name of TRACE_HEADERS) if (typeof carrier[name] === 'string') out[name] = carrier[name];
  return out;
}

/**
 * The active trace context, synchronously, for a task's row; null outside a span, without an SDK,
 * or before the API has loaded (`await otel()` first). Outside a span it allocates nothing: an
 * enqueue without OpenTelemetry pays a lookup.
 * @internal
 */
export function traceContextNow(): TraceContext | null {
  const api = otelNow();
  if (!api) return null;
  const active = api.context.active();
  if (api.trace.getSpanContext(active) === undefined) return null;
  const carrier: Record<string, string> = {};
  api.propagation.inject(active, carrier);
  const traceparent = carrier.traceparent;
  return typeof traceparent === 'string' ? { traceparent, tracestate: carrier.tracestate ?? null } : null;
}
