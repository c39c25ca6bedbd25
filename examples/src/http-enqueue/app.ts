import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { defineTask, enqueue } from '@leasehold/core';
import type { Generated, Kysely } from 'kysely';
import { readBody } from '../shared/read-body.js';

export const SCHEMA = 'http_enqueue_example';

/** The app's tables, for Kysely (the task table belongs to leasehold). */
export interface AppDatabase {
  'http_enqueue_example.app_user': { id: Generated<string>; email: string; name: string };
  'http_enqueue_example.sent_email': { user_id: string; task_id: string; to: string };
}

/** The background job a signup schedules. */
export function defineWelcomeEmail(db: Kysely<AppDatabase>) {
  return defineTask<{ userId: string; email: string }>('send-welcome-email', {
    lease: '30s',
    handlerTimeout: '10s',
    handler: async ({ userId, email }, ctx) => {
      // the mail provider call would go here, with ctx.task.id as its idempotency key
      await db.insertInto('http_enqueue_example.sent_email').values({ user_id: userId, task_id: ctx.task.id, to: email }).execute();
    },
  });
}

/**
 * The app: `POST /signup` creates a user and enqueues the welcome email in ONE transaction.
 * If anything fails before the commit — the email is taken, or the request fails after the
 * enqueue — the transaction rolls back and the task is gone with it: no email for a user that
 * does not exist. And a user that exists always gets one: the task commits with the user.
 */
export function createApp(db: Kysely<AppDatabase>, welcomeEmail: ReturnType<typeof defineWelcomeEmail>): Server {
  return createServer((req, res) => {
    route(db, welcomeEmail, req, res).catch((error: unknown) => reply(res, 500, { error: (error as Error).message }));
  });
}

async function route(
  db: Kysely<AppDatabase>,
  welcomeEmail: ReturnType<typeof defineWelcomeEmail>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (req.method !== 'POST' || url.pathname !== '/signup') return reply(res, 404, { error: 'not found' });
  const body = parseSignup(await readBody(req));
  if (!body) return reply(res, 400, { error: 'expected {"email": "...", "name": "..."}' });
  try {
    const user = await db.transaction().execute(async (trx) => {
      const row = await trx.insertInto('http_enqueue_example.app_user').values(body).returning('id').executeTakeFirstOrThrow();
      // the transaction is the executor: the task commits or rolls back with the user
      await enqueue(trx, welcomeEmail, { userId: row.id, email: body.email }, { schema: SCHEMA });
      if (url.searchParams.get('fail') === 'after-enqueue') throw new Error('simulated failure after the enqueue');
      return row;
    });
    reply(res, 201, { id: user.id });
  } catch (error) {
    if ((error as { code?: string }).code === '23505') return reply(res, 409, { error: 'email already registered' });
    throw error;
  }
}

function parseSignup(text: string): { email: string; name: string } | undefined {
  try {
    const value = JSON.parse(text) as { email?: unknown; name?: unknown };
    if (typeof value.email === 'string' && value.email.includes('@') && typeof value.name === 'string') {
      return { email: value.email, name: value.name };
    }
  } catch {
    // not JSON: a 400 below
  }
  return undefined;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
