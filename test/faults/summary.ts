// Shared bits of the fault suite: sizes from the environment, and the per-scenario summary line.

/** A positive integer from the environment (CI sets smaller counts), or `fallback`. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return value;
}

/** Prints `faults: <scenario>: key=value …`, the line the suite's output ends with per scenario. */
export function summary(scenario: string, counts: Record<string, number>): void {
  const fields = Object.entries(counts).map(([k, v]) => `${k}=${v}`);
  console.log(`faults: ${scenario}: ${fields.join(' ')}`);
}
