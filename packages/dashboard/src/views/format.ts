/** "850 ms", "42 s", "3 min 5 s", "2 h 10 min", "3 d 4 h": an age or a duration for people. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(abs)} ms`;
  const s = Math.floor(abs / 1_000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** `2026-12-01 03:42:51Z`: times are shown in UTC, as the database keeps them. */
export function formatTime(date: Date): string {
  return date.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, 'Z');
}

/** `12,345` */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

// the task page shows this much of a payload; the rest is cut with a note
const MAX_JSON_CHARS = 100_000;

/** A JSON value pretty-printed for a `<pre>`, cut at 100,000 characters. */
export function formatJson(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? String(value);
  } catch (error) {
    text = `(cannot be shown: ${(error as Error).message})`;
  }
  if (text.length <= MAX_JSON_CHARS) return text;
  return `${text.slice(0, MAX_JSON_CHARS)}\n… (${formatCount(text.length - MAX_JSON_CHARS)} more characters not shown)`;
}

/** `1 s`, `1 min`, `1 h`, `1500 ms`: a rate's period, exactly (a whole number of the largest unit that divides it). */
export function formatPeriod(ms: number): string {
  const units: ReadonlyArray<readonly [number, string]> = [[86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'min'], [1_000, 's']];
  const [size, unit] = units.find(([u]) => ms % u === 0) ?? [1, 'ms'];
  return `${ms / size} ${unit}`;
}
