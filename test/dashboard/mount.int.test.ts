// mountDashboard inside an application's own server: under a path, the way Express mounts a
// handler (it strips the mount path from req.url and keeps the full one in req.originalUrl), and
// as a Web-standard fetch handler.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mountDashboard } from '@leasehold/dashboard';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertTasks, useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const MOUNT = '/admin/queues';
let server: Server;
let origin: string;

beforeAll(async () => {
  const dashboard = mountDashboard({ database: t.pool, basePath: MOUNT });
  // what app.use(MOUNT, dashboard) does in Express: req.url loses the prefix, originalUrl keeps it
  server = createServer((req: IncomingMessage & { originalUrl?: string }, res) => {
    if (req.url === MOUNT || req.url?.startsWith(`${MOUNT}/`) || req.url?.startsWith(`${MOUNT}?`)) {
      req.originalUrl = req.url;
      req.url = req.url.slice(MOUNT.length) || '/';
      dashboard(req, res);
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('the application');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

describe('mountDashboard', () => {
  it('serves its pages, links and assets under the mount path, and leaves the rest to the application', async () => {
    const [id] = await insertTasks(t.db, 1, { name: 'mounted.task' });
    const overview = await fetch(`${origin}${MOUNT}/`);
    expect(overview.status).toBe(200);
    const html = await overview.text();
    expect(html).toContain(`href="${MOUNT}/tasks?name=mounted.task"`);
    expect(html).toContain(`src="${MOUNT}/assets/htmx.min.js"`);
    expect((await fetch(`${origin}${MOUNT}/assets/htmx.min.js`)).headers.get('content-type')).toContain('javascript');
    expect((await fetch(`${origin}${MOUNT}/assets/idiomorph-ext.min.js`)).status).toBe(200);
    expect(await (await fetch(`${origin}${MOUNT}/tasks/${id}`)).text()).toContain('mounted.task');
    expect(await (await fetch(`${origin}/elsewhere`)).text()).toBe('the application');
  });

  it('as a fetch handler, answers nobody without auth or token (it cannot see the peer), and a request with the token', async () => {
    const open = mountDashboard({ database: t.pool });
    expect((await open.fetch(new Request('http://127.0.0.1/'))).status).toBe(403);
    const token = 'fetch-handler-token-0123';
    const guarded = mountDashboard({ database: t.pool, token });
    expect((await guarded.fetch(new Request('http://127.0.0.1/'))).status).toBe(303);
    const page = await guarded.fetch(new Request('http://127.0.0.1/', { headers: { authorization: `Bearer ${token}` } }));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h1>Overview</h1>');
  });

  it('checks its options when called', () => {
    expect(() => mountDashboard({ database: t.pool, basePath: 'no-slash' })).toThrow(/basePath/);
    expect(() => mountDashboard({ database: t.pool, token: 'short' })).toThrow(/at least 16 characters/);
    expect(() => mountDashboard({ database: {} as never })).toThrow(/pg Pool or a Kysely instance/);
  });
});
