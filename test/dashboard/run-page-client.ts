// A minimal HTTP client of the dashboard for the run page's tests: it keeps the CSRF nonce cookie
// the first page sets and reads the token a page's forms carry, as a browser would, without one.
import { expect } from 'vitest';

/** A response as the tests read it. */
export interface Reply {
  readonly status: number;
  readonly text: string;
  readonly location: string | null;
}

/** One "browser": a cookie jar of the dashboard's CSRF nonce, and the dashboard's URL. */
export class DashboardClient {
  #cookie = '';
  constructor(readonly base: string) {}

  #url(path: string): string {
    return new URL(path.replace(/^\//, ''), this.base).toString();
  }

  #keep(response: Response): void {
    const set = response.headers.getSetCookie().find((c) => c.startsWith('lh_dash_csrf='));
    if (set !== undefined) this.#cookie = set.split(';')[0]!;
  }

  async get(path: string): Promise<Reply> {
    const response = await fetch(this.#url(path), { headers: { cookie: this.#cookie }, redirect: 'manual' });
    this.#keep(response);
    return { status: response.status, text: await response.text(), location: response.headers.get('location') };
  }

  /** Posts a form as a same-origin browser would (urlencoded, with the nonce cookie). */
  async post(path: string, form: Readonly<Record<string, string>>): Promise<Reply> {
    const response = await fetch(this.#url(path), {
      method: 'POST',
      headers: { cookie: this.#cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
      redirect: 'manual',
    });
    return { status: response.status, text: await response.text(), location: response.headers.get('location') };
  }

  /** The CSRF token of a page (every form of a page carries the same one). */
  async token(path: string): Promise<string> {
    const page = await this.get(path);
    expect(page.status, path).toBe(200);
    return field(page.text, '_csrf');
  }
}

/** The value of a hidden field of a page's form. */
export function field(html: string, name: string): string {
  const found = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  expect(found, `no field ${name}`).not.toBeNull();
  return decode(found![1]!);
}

/** Text of HTML as a person reads it: tags dropped, entities decoded, spaces folded. */
export function textOf(html: string): string {
  return decode(html.replace(/<[^>]+>/g, ' ')).replace(/\s+/g, ' ').replace(/ ([.,:;])/g, '$1').trim();
}

function decode(s: string): string {
  return s.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
}
