import type { RecordKind } from '../errors.js';
import type { RecordedStep } from './task-steps.js';

/**
 * What a claim read of a resumed workflow run's records (`TASK_CLAIM_JSON.resumed`), by the
 * claimed row it came with: the run replays from it instead of reading them again. A row claimed
 * without them (a first claim, a lease taken over, a claim that sends no JSON) has no entry.
 * @internal
 */
export const claimedRecords = new WeakMap<object, ReadonlyMap<string, RecordedStep>>();

/** The records from their JSON: `[name, done, result, nothing, position, kind]` each. */
export function recordedFromJson(steps: readonly (readonly unknown[])[]): ReadonlyMap<string, RecordedStep> {
  const recorded = new Map<string, RecordedStep>();
  // a result of JSON null and "returned nothing" (SQL NULL) both arrive as null; `nothing` tells them apart
  for (const [name, done, result, nothing, position, kind] of steps) {
    recorded.set(name as string, { done: done as boolean, result: nothing === true ? undefined : result, position: position as number | null, kind: kind as RecordKind | null });
  }
  return recorded;
}
