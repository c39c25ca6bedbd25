/**
 * Reads at most `maxBytes` of a response body as UTF-8 and discards the rest, so a huge or
 * endless error page cannot exhaust memory or hold the publisher past its timeout.
 */
export async function readBody(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder('utf-8', { fatal: false });
  let text = '';
  let read = 0;
  try {
    while (read < maxBytes) {
      const { done, value } = await reader.read();
      if (done) return text + decoder.decode();
      const part = value.subarray(0, maxBytes - read);
      read += part.length;
      text += decoder.decode(part, { stream: true });
    }
    return text + decoder.decode();
  } finally {
    // frees the connection whether the body ended, was cut, or the read failed
    await reader.cancel().catch(() => undefined);
  }
}
