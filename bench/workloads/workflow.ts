// Workflow step throughput: preloaded workflows of 10 no-op steps each (ctx.step, or ctx.dbStep)
// run by 1 worker process (a child, like every measured worker); the clock runs from "go" until
// every workflow has finished and none is pending or processing. Steps per second is what a
// workflow's bookkeeping costs next to process-1x8's plain tasks (the same 20,000 items).
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { enqueueMany } from '@leasehold/core';
import { BENCH_SCHEMA, settle } from '../lib/bench-database.js';
import type { ChildMessage } from '../lib/child.js';
import type { BenchConfig } from '../lib/options.js';
import { backendCpu, cpuDelta } from '../lib/server-cpu.js';
import type { BenchContext, RoundResult, Workload } from '../lib/workload.js';
import { countByStatus, freshSchema, sleep, unfinished } from './common.js';
import { CPU_METRICS } from './drain.js';
import type { WorkflowChildOptions } from './workflow-child.js';
import { stepsWorkflow, WORKFLOW_STEPS, type StepKind } from './workflow-task.js';

const SCRIPT = fileURLToPath(new URL('./workflow-child.ts', import.meta.url));

/** Workflows per round: as many steps in all as process-1x8 has tasks (20,000; 2,000 with --quick). */
const workflows = (c: BenchConfig) => Math.round(c.process.n / WORKFLOW_STEPS);

/** The worker child, forked with the flags of every bench child (sources through tsx). */
class WorkflowChild {
  readonly #proc: ChildProcess;
  readonly #buffer: ChildMessage[] = [];
  readonly #exited: Promise<void>;
  failure: Error | undefined;
  /** Workflows finished, as the child last reported. */
  handled = 0;

  constructor(options: WorkflowChildOptions) {
    this.#proc = fork(SCRIPT, [JSON.stringify(options)], {
      execArgv: [
        '--conditions=@leasehold/source', '--import', import.meta.resolve('tsx'),
        // BENCH_CPU_PROF=<dir>: a .cpuprofile of the worker, as for bench/lib/child.ts's children
        ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      ],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#exited = new Promise((resolve) => this.#proc.on('exit', (code, signal) => ((this.failure ??= new Error(`workflow child exited (${code ?? signal})`)), resolve())));
    this.#proc.on('message', (raw) => {
      const m = raw as ChildMessage;
      if (m.type === 'error') this.failure ??= new Error(`workflow child failed: ${String(m.message)}`);
      else if (m.type === 'count') this.handled = Number(m.n);
      else this.#buffer.push(m);
    });
  }

  send(message: ChildMessage): void {
    this.#proc.send(message);
  }

  /** Waits until `done()` holds; throws when the child failed or `deadline` (epoch ms) passed. */
  async until(done: () => boolean | Promise<boolean>, deadline: number, what: string): Promise<void> {
    while (!(await done())) {
      if (this.failure) throw this.failure;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(2);
    }
  }

  /** The next message of `type`. */
  async next(type: string, timeoutMs = 60_000): Promise<ChildMessage> {
    let found: ChildMessage | undefined;
    await this.until(() => (found = this.#take(type)) !== undefined, Date.now() + timeoutMs, `"${type}" from the workflow child`);
    return found!;
  }

  #take(type: string): ChildMessage | undefined {
    const i = this.#buffer.findIndex((m) => m.type === type);
    return i < 0 ? undefined : this.#buffer.splice(i, 1)[0];
  }

  /** Asks the child to stop; SIGKILLs it after `timeoutMs`. */
  async stop(timeoutMs = 20_000): Promise<void> {
    if (this.#proc.exitCode !== null || this.#proc.signalCode !== null) return;
    try {
      this.#proc.send({ type: 'stop' });
    } catch {
      // the IPC channel is already closed: the child is on its way out
    }
    const timer = setTimeout(() => this.#proc.kill('SIGKILL'), timeoutMs);
    await this.#exited;
    clearTimeout(timer);
  }
}

async function workflowRound(ctx: BenchContext, kind: StepKind): Promise<RoundResult> {
  const n = workflows(ctx.config);
  const steps = n * WORKFLOW_STEPS;
  const { concurrency, prefetch, batch } = ctx.config.process;
  await freshSchema(ctx);
  const task = stepsWorkflow(kind);
  for (let start = 0; start < n; start += 1000) {
    const items = Array.from({ length: Math.min(1000, n - start) }, (_, k) => ({ payload: { i: start + k } }));
    await enqueueMany(ctx.admin, task, items, { schema: BENCH_SCHEMA });
  }
  await settle(ctx.admin, { analyze: true });
  const child = new WorkflowChild({ url: ctx.url, schema: BENCH_SCHEMA, concurrency, prefetch, batch, kind });
  try {
    await child.next('ready');
    const serverBefore = await backendCpu(ctx.admin);
    const t0 = process.hrtime.bigint();
    child.send({ type: 'go' });
    const deadline = Date.now() + (ctx.config.quick ? 60_000 : 120_000);
    await child.until(() => child.handled >= n, deadline, `${n} workflows to finish`);
    await child.until(async () => (await unfinished(ctx.admin)) === 0, deadline, 'the last completions to commit');
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const serverMs = cpuDelta(serverBefore, await backendCpu(ctx.admin));
    child.send({ type: 'cpu' });
    const clientMs = Number((await child.next('cpu')).ms);
    child.send({ type: 'stats' });
    const failures = Number((await child.next('stats')).failures);
    const done = (await countByStatus(ctx.admin)).done ?? 0;
    const recorded = (await ctx.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${BENCH_SCHEMA}.task_step WHERE done`)).rows[0]!.n;
    const problems = [
      done !== n ? `${done} of ${n} workflows done` : '',
      recorded !== steps ? `${recorded} steps recorded, expected ${steps}` : '',
      failures !== 0 ? `${failures} failed runs` : '',
    ].filter(Boolean);
    return {
      values: { rate: steps / seconds, workflows: n / seconds, clientCpu: (clientMs / steps) * 1000, serverCpu: serverBefore.size ? (serverMs / steps) * 1000 : NaN },
      check: problems.length ? problems.join('; ') : 'ok',
      details: { seconds },
    };
  } finally {
    await child.stop();
  }
}

const describe = (c: BenchConfig, call: string) =>
  `${workflows(c).toLocaleString('en-US')} preloaded workflows of ${WORKFLOW_STEPS} × \`${call}\`, 1 worker process (createWorker: concurrency ${c.process.concurrency}, ` +
  `prefetch ${c.process.prefetch}, batch ${c.process.batch}, pool 10); from "go" until every workflow is done; CPU per 1,000 steps`;

export const workflowSteps: Workload = {
  name: 'workflow-steps',
  description: (c) => describe(c, "ctx.step(name, () => i)"),
  metrics: [
    { key: 'rate', label: 'workflow ctx.step, 1 process × 8', unit: 'steps/s' },
    { key: 'workflows', label: 'workflows of 10 steps', unit: 'workflows/s' },
    ...CPU_METRICS,
  ],
  round: (ctx) => workflowRound(ctx, 'step'),
};

export const workflowDbSteps: Workload = {
  name: 'workflow-db-steps',
  description: (c) => describe(c, 'ctx.dbStep(name, async () => i)'),
  metrics: [
    { key: 'rate', label: 'workflow ctx.dbStep, 1 process × 8', unit: 'steps/s' },
    { key: 'workflows', label: 'workflows of 10 database steps', unit: 'workflows/s' },
    ...CPU_METRICS,
  ],
  round: (ctx) => workflowRound(ctx, 'dbStep'),
};
