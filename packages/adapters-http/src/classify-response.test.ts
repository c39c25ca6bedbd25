import { describe, expect, it } from 'vitest';
import { classifyResponse, describeResponse, type HttpResponseSummary } from './classify-response.js';

const nowMs = Date.parse('2025-01-01T12:00:00Z');

function response(status: number, headers: Record<string, string> = {}, body = ''): HttpResponseSummary {
  return { status, statusText: '', headers: new Headers(headers), body };
}

describe('classifyResponse', () => {
  it('2xx is success', () => {
    for (const status of [200, 201, 202, 204, 299]) expect(classifyResponse(response(status)).kind).toBe('success');
  });

  it('408, 425, 429 and 5xx are retryable', () => {
    for (const status of [408, 425, 429, 500, 502, 503, 504, 599]) {
      expect(classifyResponse(response(status), { nowMs })).toEqual({ kind: 'retryable', reason: `HTTP ${status}` });
    }
  });

  it('honours Retry-After on a retryable status, in both forms, capped', () => {
    expect(classifyResponse(response(429, { 'retry-after': '7' }), { nowMs })).toMatchObject({ retryAfterMs: 7000 });
    expect(
      classifyResponse(response(503, { 'retry-after': 'Wed, 01 Jan 2025 12:00:45 GMT' }), { nowMs }),
    ).toMatchObject({ kind: 'retryable', retryAfterMs: 45_000 });
    expect(
      classifyResponse(response(503, { 'retry-after': '86400' }), { nowMs, maxRetryAfterMs: 60_000 }),
    ).toMatchObject({ retryAfterMs: 60_000 });
    expect(classifyResponse(response(503, { 'retry-after': 'later' }), { nowMs })).not.toHaveProperty('retryAfterMs');
  });

  it('409 follows the conflict option, success by default', () => {
    expect(classifyResponse(response(409)).kind).toBe('success');
    expect(classifyResponse(response(409), { conflict: 'success' }).kind).toBe('success');
    expect(classifyResponse(response(409), { conflict: 'permanent' })).toEqual({ kind: 'permanent', reason: 'HTTP 409' });
    expect(classifyResponse(response(409), { conflict: 'retryable' })).toEqual({ kind: 'retryable', reason: 'HTTP 409' });
  });

  it('other 4xx and 3xx are permanent; a redirect names its target without the query', () => {
    for (const status of [400, 401, 403, 404, 410, 413, 422]) {
      expect(classifyResponse(response(status, { 'retry-after': '5' })), String(status)).toEqual({
        kind: 'permanent',
        reason: `HTTP ${status}`,
      });
    }
    expect(classifyResponse(response(301, { location: 'https://new.example/hook?token=abc' }))).toEqual({
      kind: 'permanent',
      reason: 'HTTP 301 (redirect to https://new.example/hook not followed)',
    });
    expect(classifyResponse(response(304)).kind).toBe('permanent');
  });

  it('puts the status and a bounded, whitespace-collapsed body excerpt in the reason', () => {
    const body = `{"error":\n  "invalid"}${'x'.repeat(1000)}`;
    const verdict = classifyResponse({ ...response(422, {}, body), statusText: 'Unprocessable Entity' });
    expect(verdict.kind).toBe('permanent');
    const reason = (verdict as { reason: string }).reason;
    expect(reason.startsWith('HTTP 422 Unprocessable Entity: {"error": "invalid"}xxx')).toBe(true);
    expect(reason.length).toBe('HTTP 422 Unprocessable Entity: '.length + 500 + 1);
    expect(describeResponse(response(500, {}, 'abcdef'), 3)).toBe('HTTP 500: abc…');
    expect(describeResponse(response(500, {}, 'abcdef'), 0)).toBe('HTTP 500');
  });
});
