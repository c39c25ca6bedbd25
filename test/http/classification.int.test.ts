// Each row of the classification table in packages/adapters-http/README.md, against a real
// HTTP server: what httpPublisher throws, and where core's dispatcher then puts the task.
import { describe, expect, it, vi } from 'vitest';
import { dispatchOnce, isLeaseholdError, LeaseLostError } from '@leasehold/core';
import { httpPublisher, publisherTaskHandler, type HttpPublisherOptions } from '@leasehold/adapters-http';
import { insertTasks, readTask, useTestDatabase } from '../fixtures.js';
import { useTestServer } from './http-server.js';
import { makeMessage, quiet, rejection } from './message.js';

const server = useTestServer();
const t = useTestDatabase();

function publisher(options: Partial<HttpPublisherOptions> = {}) {
  return httpPublisher({ url: `${server.origin}/hook`, timeout: '5s', ...options });
}

/** Runs one task through core's dispatcher with the publisher as handler; returns the stored row. */
async function dispatchThroughCore(options: Partial<HttpPublisherOptions> = {}) {
  const [id] = await insertTasks(t.db, 1, { name: 'hook', payload: { n: 1 } });
  await dispatchOnce(t.pool, publisherTaskHandler(publisher(options)), {
    owner: 'classification-test',
    names: ['hook'],
    // a backoff of ~0 leaves Retry-After as the only thing moving available_at
    backoff: { baseMs: 1, capMs: 1 },
  });
  return readTask(t.db, id!);
}

describe('2xx', () => {
  it.each([200, 201, 202, 204])('%i is success', async (status) => {
    server.reset((_req, res) => res.writeHead(status).end());
    await expect(publisher().publish(makeMessage(), quiet)).resolves.toBeUndefined();
  });

  it('sends the envelope, the idempotency key and custom headers, the same on every retry', async () => {
    server.reset((_req, res) => res.writeHead(503).end());
    const message = makeMessage({ headers: { traceparent: '00-abc-def-01' } });
    const p = publisher({ headers: (m) => ({ 'x-tenant': `tenant-of-${m.key}` }) });
    await rejection(p.publish(message, quiet));
    await rejection(p.publish({ ...message, attempts: 2 }, quiet));
    expect(server.requests).toHaveLength(2);
    for (const request of server.requests) {
      expect(request.method).toBe('POST');
      expect(request.url).toBe('/hook');
      expect(request.headers['idempotency-key']).toBe(message.id);
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['x-tenant']).toBe('tenant-of-order-7');
      expect(request.headers.traceparent).toBe('00-abc-def-01');
      expect(JSON.parse(request.body)).toEqual({
        id: message.id,
        type: 'order.placed',
        key: 'order-7',
        occurredAt: '2025-01-01T12:00:00.000Z',
        data: { amount: 42, currency: 'EUR' },
      });
    }
    expect(server.requests[1]!.body).toBe(server.requests[0]!.body);
  });

  it('posts to a URL computed from the message, under a custom idempotency header', async () => {
    server.reset((_req, res) => res.writeHead(200).end());
    const p = publisher({ url: (m) => `${server.origin}/tenants/${m.key}/events`, idempotencyHeader: 'X-Idempotency-Key' });
    const message = makeMessage();
    await p.publish(message, quiet);
    expect(server.requests[0]!.url).toBe('/tenants/order-7/events');
    expect(server.requests[0]!.headers['x-idempotency-key']).toBe(message.id);
  });
});

describe('retryable', () => {
  it.each([408, 425, 429, 500, 502, 503, 504])('%i is retryable', async (status) => {
    server.reset((_req, res) => res.writeHead(status).end('try later'));
    const error = await rejection(publisher().publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'RETRYABLE')).toBe(true);
    expect(error.status).toBe(status);
    expect(error.message).toContain(`HTTP ${status}`);
    expect(error.message).toContain('try later');
    expect(error.retryAfterMs).toBeUndefined();
  });

  it('Retry-After in delta-seconds sets retryAfterMs and moves available_at', async () => {
    server.reset((_req, res) => res.writeHead(429, { 'retry-after': '120' }).end());
    const error = await rejection(publisher().publish(makeMessage(), quiet));
    expect(error.retryAfterMs).toBe(120_000);

    const task = await dispatchThroughCore();
    expect(task.status).toBe('pending');
    expect(task.availableInMs).toBeGreaterThan(118_000);
    expect(task.availableInMs).toBeLessThanOrEqual(120_000);
  });

  it('Retry-After as an HTTP date sets retryAfterMs and moves available_at', async () => {
    // measured against the response's Date header, as the server's clock is the one that counts
    server.reset((_req, res) => {
      const date = new Date();
      res.writeHead(503, { date: date.toUTCString(), 'retry-after': new Date(date.getTime() + 90_000).toUTCString() }).end();
    });
    const error = await rejection(publisher().publish(makeMessage(), quiet));
    expect(error.retryAfterMs).toBe(90_000);

    const task = await dispatchThroughCore();
    expect(task.status).toBe('pending');
    expect(task.availableInMs).toBeGreaterThan(88_000);
    expect(task.availableInMs).toBeLessThanOrEqual(90_000);
  });

  it('a Retry-After longer than maxRetryAfter is cut to it', async () => {
    server.reset((_req, res) => res.writeHead(503, { 'retry-after': '86400' }).end());
    const error = await rejection(publisher({ maxRetryAfter: '10m' }).publish(makeMessage(), quiet));
    expect(error.retryAfterMs).toBe(600_000);
  });

  it('a hung server times out as retryable', async () => {
    server.reset(() => undefined); // never answers
    const error = await rejection(publisher({ timeout: 300 }).publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'RETRYABLE')).toBe(true);
    expect(error.message).toMatch(/timed out after 300 ms/);
    expect(error.status).toBeUndefined();
  });

  it('a body that stops half-way times out as retryable', async () => {
    server.reset((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('{"partial":');
    });
    const error = await rejection(publisher({ timeout: 300 }).publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'RETRYABLE')).toBe(true);
    expect(error.message).toMatch(/timed out/);
  });

  it('a connection reset is retryable', async () => {
    server.reset((req) => req.socket.destroy());
    const error = await rejection(publisher().publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'RETRYABLE')).toBe(true);
    expect(error.message).toMatch(/failed: fetch failed: other side closed|ECONNRESET/);
  });

  it('a refused connection is retryable', async () => {
    const error = await rejection(httpPublisher({ url: 'http://127.0.0.1:9/hook' }).publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'RETRYABLE')).toBe(true);
    expect(error.message).toContain('POST http://127.0.0.1:9/hook failed');
  });
});

describe('the dispatcher signal', () => {
  it('aborts the request and rethrows its reason, so a lost lease stays a lost lease', async () => {
    server.reset(() => undefined);
    const controller = new AbortController();
    const pending = rejection(publisher().publish(makeMessage(), { signal: controller.signal }));
    await vi.waitFor(() => expect(server.requests).toHaveLength(1));
    const lost = new LeaseLostError('1', 3);
    controller.abort(lost);
    expect(await pending).toBe(lost);
  });
});

describe('409', () => {
  it('is success by default ("already in the target state")', async () => {
    server.reset((_req, res) => res.writeHead(409).end('already applied'));
    await expect(publisher().publish(makeMessage(), quiet)).resolves.toBeUndefined();
    await expect(publisher({ conflict: 'success' }).publish(makeMessage(), quiet)).resolves.toBeUndefined();
  });

  it('is permanent with conflict: permanent', async () => {
    server.reset((_req, res) => res.writeHead(409).end('version conflict'));
    const error = await rejection(publisher({ conflict: 'permanent' }).publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'PERMANENT')).toBe(true);
    expect(error.message).toContain('HTTP 409');
  });

  it('is retryable with conflict: retryable', async () => {
    server.reset((_req, res) => res.writeHead(409).end());
    const error = await rejection(publisher({ conflict: 'retryable' }).publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'RETRYABLE')).toBe(true);
  });
});

describe('permanent', () => {
  it.each([400, 401, 403, 404, 410, 422])('%i is permanent', async (status) => {
    server.reset((_req, res) => res.writeHead(status).end('nope'));
    const error = await rejection(publisher().publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'PERMANENT')).toBe(true);
    expect(error.status).toBe(status);
    expect(error.message).toContain(`HTTP ${status}`);
  });

  it.each([301, 302, 307, 308])('%i is permanent and the redirect is not followed', async (status) => {
    server.reset((req, res) => {
      if (req.url === '/hook') res.writeHead(status, { location: '/elsewhere' }).end();
      else res.writeHead(200).end();
    });
    const error = await rejection(publisher().publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'PERMANENT')).toBe(true);
    expect(error.message).toContain('redirect to /elsewhere not followed');
    expect(server.requests.map((r) => r.url)).toEqual(['/hook']);
  });

  it('puts the status and a bounded body excerpt in last_error', async () => {
    server.reset((_req, res) => res.writeHead(422, { 'content-type': 'application/json' }).end(`{"error":"amount must be positive"}${' pad'.repeat(5000)}`));
    const task = await dispatchThroughCore();
    expect(task.status).toBe('dead');
    expect(task.lastError).toContain('HTTP 422 Unprocessable Entity: {"error":"amount must be positive"} pad pad');
    const excerpt = /HTTP 422 Unprocessable Entity: (.*?…)/.exec(task.lastError!)?.[1];
    expect(excerpt).toHaveLength(501);
  });
});

describe('the classify hook', () => {
  it('overrides the table, and falls back to it by returning undefined', async () => {
    server.reset((req, res) => {
      if (req.url === '/hook') res.writeHead(200).end('{"status":"rejected","why":"card declined"}');
      else res.writeHead(503).end();
    });
    const p = publisher({
      classify: (response) =>
        response.body.includes('"rejected"') ? { kind: 'permanent', reason: `rejected: ${response.body}` } : undefined,
    });
    const error = await rejection(p.publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'PERMANENT')).toBe(true);
    expect(error.message).toContain('card declined');

    const fallback = publisher({ url: `${server.origin}/other`, classify: () => undefined });
    expect(isLeaseholdError(await rejection(fallback.publish(makeMessage(), quiet)), 'RETRYABLE')).toBe(true);
  });

  it('can defer', async () => {
    server.reset((_req, res) => res.writeHead(404).end('customer not created yet'));
    const p = publisher({
      classify: (response) => (response.status === 404 ? { kind: 'defer', delay: '30s', reason: response.body } : undefined),
    });
    const error = await rejection(p.publish(makeMessage(), quiet));
    expect(isLeaseholdError(error, 'DEFER')).toBe(true);
    expect(error.delayMs).toBe(30_000);
  });
});
