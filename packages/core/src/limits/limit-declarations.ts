import { ConfigError } from '../errors.js';
import type { LimitDeclaration } from '../sql/limit-register-many.js';
import type { TaskDefinition } from '../task/define-task.js';
import type { LimitDefinition } from './define-limit.js';

/**
 * The limits a worker's tasks run under, each with the names of its tasks there. Two different
 * limits of one name are a `ConfigError` (`tasks`): the database keeps one set of bounds per name.
 */
export function limitDeclarations(tasks: readonly TaskDefinition<unknown, unknown>[]): LimitDeclaration[] {
  const byName = new Map<string, { limit: LimitDefinition; taskNames: string[] }>();
  for (const task of tasks) {
    const limit = task.limit ?? null;
    if (limit === null) continue;
    const seen = byName.get(limit.name);
    if (seen === undefined) byName.set(limit.name, { limit, taskNames: [task.name] });
    else if (sameBounds(seen.limit, limit)) seen.taskNames.push(task.name);
    else throw new ConfigError('tasks', `Tasks "${seen.taskNames[0]}" and "${task.name}" run under two different limits named "${limit.name}"`);
  }
  return [...byName.values()];
}

function sameBounds(a: LimitDefinition, b: LimitDefinition): boolean {
  const rate = (r: LimitDefinition['rate']) => (r === null ? '' : `${r.limit}/${r.periodMs}`);
  return a.concurrency === b.concurrency && a.concurrencyPerKey === b.concurrencyPerKey && rate(a.rate) === rate(b.rate) && rate(a.ratePerKey) === rate(b.ratePerKey);
}
