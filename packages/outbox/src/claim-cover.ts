/**
 * When each claimed message arrived, to tell whether its claim's lease alone still covers a
 * publish that starts now. The dispatcher buffers as many messages as its observed publish time
 * calls for, which at a slow publish could outlast a lease; a message that waited longer than
 * `coverMs` is published only after a fenced lease extension. Timed on the monotonic clock from
 * when the claim's rows arrived, so a claim's round trip is inside the margin `coverMs` leaves
 * (see `unconfirmedStartMs`). Keyed weakly: a message given back unpublished leaves nothing.
 * @internal
 */
export class ClaimCover {
  readonly #claimedAt = new WeakMap<object, number>();
  readonly #coverMs: number;

  constructor(coverMs: number) {
    this.#coverMs = coverMs;
  }

  /** The worker took charge of `message` just now. */
  claimed(message: object): void {
    this.#claimedAt.set(message, performance.now());
  }

  /** Whether a publish of `message` starting now ends inside its claim's lease (unknown: no). */
  covers(message: object): boolean {
    const at = this.#claimedAt.get(message);
    return at !== undefined && performance.now() - at <= this.#coverMs;
  }
}
