import type { IncomingMessage } from 'node:http';

/** The request body as text: a webhook signature is computed over the raw bytes, not parsed JSON. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}
