// Secrets never appear in errors, logs or last_error: every failure path is walked with a
// signing secret and a bearer token in play, and whatever comes out is searched for them.
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { dispatchOnce } from '@leasehold/core';
import { createDispatcher, createOutbox } from '@leasehold/outbox';
import {
  generateWebhookSecret,
  httpPublisher,
  parseWebhookSecrets,
  publisherTaskHandler,
  signWebhook,
  verifyWebhook,
  type HttpPublisherOptions,
} from '@leasehold/adapters-http';
import { insertTasks, readTask, useTestDatabase } from '../fixtures.js';
import { readMessages, resetOutbox } from '../outbox/helpers.js';
import { nextEvent, useWorkers } from '../workers.js';
import { useTestServer } from './http-server.js';
import { makeMessage, quiet, rejection } from './message.js';

const server = useTestServer();
const t = useTestDatabase();
const secret = generateWebhookSecret();
const token = `tok_${'s3cr3t'.repeat(6)}`;
// a credential the producer put on the event itself, not on the publisher
const tenantToken = `tenant_${'t0k3n'.repeat(6)}`;
const SECRETS = [secret, secret.slice('whsec_'.length), token, tenantToken];
const track = useWorkers();

/** Everything an error could show: message, stack, data fields and causes, as inspected. */
function everything(error: unknown): string {
  const e = error as Error;
  return [String(e?.message), String(e?.stack), inspect(error, { depth: 10, showHidden: true }), JSON.stringify(error)].join('\n');
}

function expectClean(text: string, where: string): void {
  for (const s of SECRETS) expect(text.includes(s), `${where} contains a secret`).toBe(false);
}

let consoleSpies: MockInstance[] = [];
beforeAll(() => {
  consoleSpies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((m) => vi.spyOn(console, m));
});
afterAll(() => {
  // nothing logged anything carrying a secret (the package itself logs nothing)
  for (const spy of consoleSpies) expectClean(inspect(spy.mock.calls, { depth: 10 }), 'console output');
  for (const spy of consoleSpies) spy.mockRestore();
});

function publisher(options: Partial<HttpPublisherOptions> = {}) {
  return httpPublisher({
    url: `${server.origin}/hook`,
    timeout: 300,
    signingSecrets: [secret],
    headers: { authorization: `Bearer ${token}` },
    ...options,
  });
}

// a careless receiver: echoes the request headers and, worse, the secrets it was configured with
function echo(status: number) {
  server.reset((req, res) =>
    res.writeHead(status).end(`${JSON.stringify(req.headers)} configured with ${secret} and ${token}`),
  );
}

describe('publisher failure paths', () => {
  it.each([400, 401, 409, 422, 429, 500, 503])('HTTP %i echoing the secrets', async (status) => {
    echo(status);
    const error = await rejection(publisher({ conflict: 'permanent' }).publish(makeMessage(), quiet));
    expect(error.message).toContain(`HTTP ${status}`);
    expect(error.message).toContain('[redacted]');
    expectClean(everything(error), `HTTP ${status} error`);
  });

  it('a redirect whose target carries a token', async () => {
    server.reset((_req, res) => res.writeHead(302, { location: `https://x.example/${token}?key=${token}` }).end());
    expectClean(everything(await rejection(publisher().publish(makeMessage(), quiet))), 'redirect error');
  });

  it('a timeout, a reset and a refused connection', async () => {
    server.reset(() => undefined);
    expectClean(everything(await rejection(publisher().publish(makeMessage(), quiet))), 'timeout error');
    server.reset((req) => req.socket.destroy());
    expectClean(everything(await rejection(publisher().publish(makeMessage(), quiet))), 'reset error');
    const refused = publisher({ url: 'http://127.0.0.1:9/hook' });
    expectClean(everything(await rejection(refused.publish(makeMessage(), quiet))), 'refused error');
  });

  it('a header value fetch would refuse (and echo)', async () => {
    echo(200);
    const p = publisher({ headers: () => ({ authorization: `Bearer ${token}\r\nx-injected: 1` }) });
    const error = await rejection(p.publish(makeMessage(), quiet));
    expect(error.message).toContain('header `headers(message).authorization` has a value HTTP cannot carry');
    expectClean(everything(error), 'header error');
  });

  it('computed URLs that are invalid or carry credentials', async () => {
    for (const url of [`not a url ${token}`, `ftp://${server.origin.slice(7)}/${token}`, `http://user:${token}@127.0.0.1:9/hook`]) {
      const error = await rejection(publisher({ url: () => url }).publish(makeMessage(), quiet));
      expectClean(everything(error), `URL error for ${url.slice(0, 8)}`);
    }
  });

  it('a URL whose path is the credential, with hideUrlPath', async () => {
    const pathSecret = `B0001/${'xoxpathsecret'.repeat(3)}`;
    SECRETS.push(pathSecret);
    server.reset((_req, res) => res.writeHead(500).end());
    const p = httpPublisher({ url: `${server.origin}/services/${pathSecret}`, hideUrlPath: true });
    const error = await rejection(p.publish(makeMessage(), quiet));
    expect(error.message).toBe(`POST ${server.origin} → HTTP 500 Internal Server Error`);
    expectClean(everything(error), 'hidden-path error');
    SECRETS.pop();
  });

  it('a classify hook that puts the body in its reason', async () => {
    echo(200);
    const p = publisher({ classify: (r) => ({ kind: 'permanent', reason: r.body }) });
    expectClean(everything(await rejection(p.publish(makeMessage(), quiet))), 'hook error');
  });

  it('configuration errors', () => {
    const bad = [`whsec_${Buffer.from(token.slice(0, 20)).toString('base64')}`, `whsec_${token}!`];
    SECRETS.push(...bad, ...bad.map((b) => b.slice(6)));
    for (const signingSecrets of [bad[0]!, [secret, bad[1]!]]) {
      let thrown: unknown;
      try {
        httpPublisher({ url: `${server.origin}/hook`, signingSecrets });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(Error);
      expectClean(everything(thrown), 'config error');
      expect(() => parseWebhookSecrets(signingSecrets)).toThrow();
    }
    for (const url of [`http://user:${token}@example.com/hook`, `gopher://${token}.example/`]) {
      let thrown: unknown;
      try {
        httpPublisher({ url });
      } catch (error) {
        thrown = error;
      }
      expectClean(everything(thrown), 'url config error');
    }
  });

  it.each([400, 409, 422, 503])('HTTP %i echoing a credential header of the event itself', async (status) => {
    echo(status);
    const message = makeMessage({ headers: { 'x-tenant-token': tenantToken, 'x-trace': 'visible-trace-id' } });
    const error = await rejection(publisher({ conflict: 'permanent' }).publish(message, quiet));
    expect(server.requests[0]?.headers['x-tenant-token']).toBe(tenantToken); // it was sent, and echoed
    expect(error.message).toContain('visible-trace-id'); // other headers are not touched
    expectClean(everything(error), `HTTP ${status} error`);
  });

  it('a secret cut in half by the excerpt is still scrubbed', async () => {
    // the excerpt (60 characters) ends ten characters into the token
    server.reset((_req, res) => res.writeHead(422).end(`${'x'.repeat(50)}${tenantToken} and more`));
    const message = makeMessage({ headers: { 'x-tenant-token': tenantToken } });
    const error = await rejection(publisher({ excerptLength: 60 }).publish(message, quiet));
    expect(error.message).toContain('[redacted]');
    expect(everything(error)).not.toContain(tenantToken.slice(0, 10));
  });

  it('a classify hook that defers with the body as its reason', async () => {
    echo(200);
    const message = makeMessage({ headers: { 'x-tenant-token': tenantToken } });
    const p = publisher({ classify: (r) => ({ kind: 'defer', delay: '1s', reason: r.body }) });
    const error = await rejection(p.publish(message, quiet));
    expect(error.code).toBe('DEFER');
    expectClean(String(error.reason), 'defer reason');
    expectClean(everything(error), 'defer error');
  });

  it('the publisher object itself, when logged', () => {
    expectClean(inspect(publisher(), { depth: 10, showHidden: true }), 'inspected publisher');
    expectClean(JSON.stringify(publisher()), 'serialised publisher');
  });
});

describe('last_error', () => {
  it('holds no secret after retryable and permanent failures', async () => {
    for (const status of [503, 422]) {
      echo(status);
      const [id] = await insertTasks(t.db, 1, { name: 'hook' });
      await dispatchOnce(t.pool, publisherTaskHandler(publisher()), { owner: 'secrets-test', names: ['hook'] });
      const task = await readTask(t.db, id!);
      expect(task.status).toBe(status === 503 ? 'pending' : 'dead');
      expect(task.lastError).toContain(`HTTP ${status}`);
      expectClean(task.lastError!, `last_error after HTTP ${status}`);
    }
  });
});

describe('an outbox event whose own header is a credential, echoed by the receiver', () => {
  it('never reaches last_error, the events or the logs', async () => {
    await resetOutbox(t.db);
    let calls = 0;
    // first a retryable answer, then a permanent one; both echo the request headers
    server.reset((req, res) => res.writeHead(++calls === 1 ? 503 : 422).end(`rejected ${JSON.stringify(req.headers)}`));
    const outbox = createOutbox();
    const [id] = await outbox.addMany(t.pool, [
      { aggregateType: 'tenant', aggregateId: 't-1', eventType: 'Billed', payload: { n: 1 }, headers: { 'x-tenant-token': tenantToken }, maxAttempts: 2 },
    ]);
    const dispatcher = track(
      createDispatcher({ pool: t.pool, publisher: publisher(), pollInterval: '50ms', backoff: { base: '1ms', cap: '5ms' } }),
    );
    const seen: unknown[] = [];
    for (const event of ['task:retrying', 'task:dead', 'task:deferred', 'worker:error'] as const) {
      dispatcher.on(event, (payload) => void seen.push((payload as { error?: unknown; reason?: unknown }).error ?? (payload as { reason?: unknown }).reason));
    }
    const dead = nextEvent(dispatcher, 'task:dead', ({ task }) => task.id === id);
    await dispatcher.start();
    try {
      await dead;
    } finally {
      await dispatcher.stop();
    }
    expect(server.requests.map((r) => r.headers['x-tenant-token'])).toEqual([tenantToken, tenantToken]);
    const [row] = await readMessages(t.db, [id!]);
    expect(row).toMatchObject({ status: 'dead', attempts: 2 });
    expect(row!.lastError).toContain('HTTP 422');
    expectClean(row!.lastError!, 'last_error');
    expect(seen).toHaveLength(2);
    for (const error of seen) expectClean(error instanceof Error ? everything(error) : String(error), 'event');
  });
});

describe('verification failure paths', () => {
  it('name the reason and never the secret or the expected signature', () => {
    const body = `{"data":"${token}"}`;
    const now = Math.floor(Date.now() / 1000);
    const good = signWebhook({ id: 'm1', body }, secret);
    const expectedSignature = good['webhook-signature'].slice(3);
    SECRETS.push(expectedSignature);
    const cases: Array<[Record<string, string>, string]> = [
      [{ ...good, 'webhook-signature': '' }, body],
      [{ ...good, 'webhook-timestamp': 'soon' }, body],
      [signWebhook({ id: 'm1', body, timestamp: now - 3600 }, secret), body],
      [signWebhook({ id: 'm1', body, timestamp: now + 3600 }, secret), body],
      [good, `${body} `],
      [{ ...good, 'webhook-signature': 'v1,AAAA' }, body],
    ];
    for (const [headers, raw] of cases) {
      let thrown: unknown;
      try {
        verifyWebhook(headers, raw, secret);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(Error);
      expectClean(everything(thrown), 'verification error');
    }
    SECRETS.pop();
  });
});
