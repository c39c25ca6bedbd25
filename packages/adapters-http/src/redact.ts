/** Replaces every occurrence of each secret in `text`, so no error or log can carry one. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    // very short values would mangle ordinary text and protect nothing
    if (secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  return out;
}

/**
 * A URL for messages: origin and path only. User info and the query string are dropped because
 * they are where tokens live (`https://user:token@host/hook?key=…`).
 */
export function describeUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}
