import { otel } from './otel-api.js';

/** W3C trace context headers: what {@link currentTraceHeaders} writes and {@link withRemoteParent} reads. */
export const TRACE_HEADERS = ['traceparent', 'tracestate'] as const;

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
