/** Where a command writes: results to `out` (stdout), diagnostics to `err` (stderr). */
export interface Io {
  /** Writes one result line (a newline is added). */
  out(text: string): void;
  /** Writes one diagnostic line (a newline is added). */
  err(text: string): void;
  /** Whether stdout is a terminal: `watch` then redraws the screen in place. */
  readonly isTTY: boolean;
  /** Terminal width, for cutting long error texts. */
  readonly columns: number;
}

/** The process's own streams. */
export function processIo(): Io {
  return {
    out: (text) => void process.stdout.write(`${text}\n`),
    err: (text) => void process.stderr.write(`${text}\n`),
    isTTY: process.stdout.isTTY === true,
    columns: process.stdout.columns ?? 120,
  };
}
