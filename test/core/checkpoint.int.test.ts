import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, enqueue } from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { stepsTask } from './checkpoint-task.js';

const t = useTestDatabase();
const track = useWorkers();

describe('checkpoint', () => {
  it('a checkpointed task killed mid-way resumes from its checkpoint on another worker', async () => {
    await sql`CREATE TABLE step_sink (task_id bigint, step int, pid int)`.execute(t.db);
    const steps = stepsTask(t.pool);
    const { id } = await enqueue(t.pool, steps, { steps: 5 });

    const child = spawn(process.execPath, ['--conditions=@leasehold/source', '--import', 'tsx', 'test/core/checkpoint-child.ts', t.url], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: string) => {
        out += chunk;
        if (out.includes('checkpointed 2')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`child exited early (${code}): ${out}`)));
    });
    child.kill('SIGKILL');
    await once(child, 'exit');

    const worker = track(createWorker({ pool: t.pool, tasks: [steps], owner: 'survivor', pollInterval: 25 }));
    const done = nextEvent(worker, 'task:succeeded', ({ task }) => task.id === id);
    await worker.start();
    await done; // after the dead child's lease expired
    await worker.stop();

    const { rows } = await sql<{ step: number; pid: number }>`SELECT step, pid FROM step_sink ORDER BY step`.execute(t.db);
    expect(rows.map((r) => r.step)).toEqual([1, 2, 3, 4, 5]); // no step done twice
    expect(rows.slice(0, 2).every((r) => r.pid === child.pid)).toBe(true);
    expect(rows.slice(2).every((r) => r.pid === process.pid)).toBe(true);
    expect(await readTask(t.db, id)).toMatchObject({ status: 'done', attempts: 2, leaseVersion: 2 });
  });
});
