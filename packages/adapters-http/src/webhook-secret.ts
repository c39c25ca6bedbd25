import { createHmac, randomBytes } from 'node:crypto';
import { ConfigError } from '@leasehold/core';

const PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;
/** The Standard Webhooks specification asks for keys of 24 to 64 bytes; shorter ones are guessable. */
const MIN_KEY_BYTES = 24;

/**
 * A parsed signing key. The key sits in a private field, so logging or inspecting the object
 * (or an options object holding it) never prints it.
 */
export class WebhookKey {
  readonly #key: Buffer;

  /** @internal use {@link parseWebhookSecrets} */
  constructor(key: Buffer) {
    this.#key = key;
  }

  /** HMAC-SHA256 of `content` under this key; the key itself never leaves the object. */
  hmac(content: Uint8Array): Buffer {
    return createHmac('sha256', this.#key).update(content).digest();
  }

  /** Never the key. */
  toJSON(): string {
    return '[WebhookKey]';
  }
}

/**
 * Parses one or more `whsec_<base64>` secrets (the prefix is optional, as in the reference
 * libraries). Several secrets are for rotation: sign with all, verify against any. Throws a
 * `ConfigError` naming `option` and the secret's position, never its text.
 */
export function parseWebhookSecrets(secrets: string | readonly string[], option = 'secrets'): WebhookKey[] {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  if (!Array.isArray(list) || list.length === 0) {
    throw new ConfigError(option, `Expected \`${option}\` to be a webhook secret or a non-empty list of them`);
  }
  return list.map((secret: unknown, i) => parseOne(secret, list.length === 1 ? option : `${option}[${i}]`));
}

/** Secrets as strings or already parsed keys, as {@link WebhookKey}s. */
export function toWebhookKeys(secrets: string | readonly string[] | readonly WebhookKey[], option = 'secrets'): WebhookKey[] {
  if (Array.isArray(secrets) && secrets.length > 0 && secrets.every((s) => s instanceof WebhookKey)) {
    return secrets as WebhookKey[];
  }
  return parseWebhookSecrets(secrets as string | readonly string[], option);
}

function parseOne(secret: unknown, option: string): WebhookKey {
  if (typeof secret !== 'string') {
    throw new ConfigError(option, `Expected \`${option}\` to be a string ('whsec_' + base64), got ${typeof secret}`);
  }
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  if (encoded === '' || !BASE64.test(encoded)) {
    throw new ConfigError(option, `Expected \`${option}\` to be 'whsec_' followed by base64 (the value is not shown)`);
  }
  const key = Buffer.from(encoded, 'base64');
  if (key.length < MIN_KEY_BYTES) {
    throw new ConfigError(option, `Expected \`${option}\` to hold at least ${MIN_KEY_BYTES} bytes of key, got ${key.length}`);
  }
  return new WebhookKey(key);
}

/**
 * The strings to scrub from any text this package produces: each secret as given and its
 * base64 part.
 */
export function secretTexts(secrets: string | readonly string[]): string[] {
  const list = typeof secrets === 'string' ? [secrets] : [...secrets];
  return list.flatMap((s) => (typeof s === 'string' ? [s, s.startsWith(PREFIX) ? s.slice(PREFIX.length) : s] : []));
}

/**
 * A new random secret in the Standard Webhooks format: `whsec_` + base64 of 32 random bytes.
 *
 * @example
 * const secret = generateWebhookSecret(); // 'whsec_q2V…='
 */
export function generateWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}
