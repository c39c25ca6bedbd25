// Every page is built with Hono's `html` tag, which escapes each interpolated value (payloads,
// errors, names and keys are attacker-controlled strings): strings are escaped, arrays joined,
// null / undefined / booleans left out, and only fragments made by this tag pass through as markup.
import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

/** A fragment of escaped HTML. */
export type Html = HtmlEscapedString;

/** Hono's `html` tag, for fragments that interpolate no promises (every fragment here). */
export function h(strings: TemplateStringsArray, ...values: unknown[]): Html {
  return html(strings, ...values) as Html;
}
