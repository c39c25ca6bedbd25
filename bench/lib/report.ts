// Turns the rounds' figures into the table `npm run bench` prints (Markdown, so it can be pasted
// into RESULTS.md as is).
import type { BenchConfig } from './options.js';
import { fmt, max, median, min } from './stats.js';
import type { Environment } from './bench-database.js';
import type { Metric, RoundResult, Workload } from './workload.js';

/** Everything one workload produced: its rounds, or why it did not run. */
export interface WorkloadRecord {
  readonly workload: Workload;
  readonly rounds: (RoundResult | { readonly error: string })[];
  readonly unavailable?: string;
}

export interface MetricSummary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly n: number;
}

export function summarise(record: WorkloadRecord, metric: Metric): MetricSummary {
  const values = record.rounds.flatMap((r) => ('values' in r && r.values[metric.key] !== undefined ? [r.values[metric.key]!] : []));
  return { median: median(values), min: min(values), max: max(values), n: values.length };
}

function verdict(metric: Metric, s: MetricSummary): string {
  const t = metric.target;
  if (!t || !Number.isFinite(s.median)) return '';
  const met = t.op === '>=' ? s.median >= t.value : s.median <= t.value;
  if (met) return 'met';
  const by = t.op === '>=' ? (1 - s.median / t.value) * 100 : (s.median / t.value - 1) * 100;
  return `missed by ${by.toFixed(0)} %`;
}

function problems(record: WorkloadRecord): string[] {
  return record.rounds.flatMap((r, i) => ('error' in r ? [`round ${i + 1}: ${r.error}`] : r.check !== 'ok' ? [`round ${i + 1}: ${r.check}`] : []));
}

/** True when any round failed or failed its sanity check. */
export function hasFailures(records: readonly WorkloadRecord[]): boolean {
  return records.some((r) => problems(r).length > 0);
}

export function renderTable(records: readonly WorkloadRecord[]): string {
  const lines = ['| workload | metric | median | (min–max) | target | |', '|---|---|---:|---|---|---|'];
  for (const record of records) {
    const name = record.workload.name;
    if (record.unavailable) {
      lines.push(`| ${name} | — | n/a | | | ${record.unavailable} |`);
      continue;
    }
    for (const metric of record.workload.metrics) {
      const s = summarise(record, metric);
      const range = s.n > 1 ? `(${fmt(s.min)}–${fmt(s.max)})` : '';
      const target = metric.target ? `${metric.target.op} ${fmt(metric.target.value)}` : '';
      const errs = problems(record);
      const note = Number.isFinite(s.median) ? verdict(metric, s) : `failed: ${errs[0] ?? 'no result'}`;
      lines.push(`| ${name} | ${metric.label} (${metric.unit}) | **${fmt(s.median)}** | ${range} | ${target} | ${note} |`);
    }
  }
  return lines.join('\n');
}

export function renderHeader(config: BenchConfig, env: Environment, load: { before: string; after: string }): string {
  const settings = Object.entries(env.settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  return [
    `leasehold bench, ${env.date}, ${config.quick ? 'quick' : 'full'}, ${config.rounds} round(s); medians (min–max) across rounds`,
    `- ${env.postgres}`,
    `- settings: ${settings}`,
    `- machine: ${env.machine}; Node.js ${env.node}; client and server on one host`,
    `- load average (1/5/15 min) before: ${load.before}, after: ${load.after}`,
  ].join('\n');
}

export function renderProblems(records: readonly WorkloadRecord[]): string {
  const lines = records.flatMap((r) => problems(r).map((p) => `- ${r.workload.name} ${p}`));
  return lines.length ? `Problems:\n${lines.join('\n')}` : '';
}

export function renderDescriptions(config: BenchConfig, records: readonly WorkloadRecord[]): string {
  return records.map((r) => `- ${r.workload.name}: ${r.workload.description(config)}`).join('\n');
}
