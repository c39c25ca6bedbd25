import { cancelTask, defineSignal, forkTask, isLeaseholdError, sendSignal, type Executor } from '@leasehold/core';
import { toError } from '@leasehold/core/internal';
import { badRequest, one, parseName, parseReason } from '../input.js';

/** A change to a run a person asks for on its page (retry of a dead run is the dead letters' own). */
export type RunAction =
  | { readonly action: 'cancel'; readonly reason: string }
  | { readonly action: 'signal'; readonly name: string; /** The JSON text as typed ('' for none). */ readonly payload: string }
  | { readonly action: 'fork'; readonly fromStep: string };

/** The actions of {@link RunAction}, as they appear in URLs. */
export const RUN_ACTIONS = ['cancel', 'signal', 'fork'] as const;

/** What a confirmed action did, kept under its idempotency key for the result page. */
export interface RunOutcome {
  readonly action: RunAction['action'];
  readonly taskId: string;
  /** False: nothing changed; `refused` says why. */
  readonly ok: boolean;
  readonly refused: string | null;
  /** cancel: the ids it cancelled (the run and its unfinished children). */
  readonly cancelled: readonly string[];
  /** signal: whether it was stored for the run, and the run's status then. */
  readonly delivered: boolean | null;
  readonly status: string | null;
  /** fork: the new run's id. */
  readonly forkId: string | null;
}

// a signal's payload as typed: the page keeps it whole when it is refused
const MAX_PAYLOAD_BYTES = 64 * 1024;
// core keeps at most 1,024 bytes of a cancel's reason; the dashboard adds who and how
const MAX_CANCEL_REASON_BYTES = 800;

/** Reads an action's fields from a posted form; a 400 naming the field when one is wrong. */
export function parseRunAction(action: string, body: Record<string, unknown>): RunAction {
  if (action === 'cancel') {
    const reason = parseReason(one(body.reason));
    if (Buffer.byteLength(reason) > MAX_CANCEL_REASON_BYTES) throw badRequest(`The reason may be at most ${MAX_CANCEL_REASON_BYTES} bytes`);
    return { action, reason };
  }
  if (action === 'signal') {
    const name = parseName(one(body.name), 'name');
    if (name === null) throw badRequest('Name the signal: the name the workflow waits for');
    return { action, name, payload: one(body.payload) };
  }
  if (action === 'fork') {
    const fromStep = parseName(one(body.fromStep), 'fromStep');
    if (fromStep === null) throw badRequest('Choose the step to fork from');
    return { action, fromStep };
  }
  throw badRequest(`Unknown action "${action}"`);
}

/** A signal's payload text as JSON, or why it is not: '' is no payload. */
export function signalPayload(text: string): { ok: true; value: unknown } | { ok: false; why: string } {
  if (text.trim() === '') return { ok: true, value: undefined };
  if (Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) return { ok: false, why: `The payload may be at most ${MAX_PAYLOAD_BYTES / 1024} KiB of JSON` };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, why: `The payload is not valid JSON: ${toError(error).message}` };
  }
}

/**
 * Applies a confirmed action through core's `cancelTask`, `sendSignal` or `forkTask` (what
 * `leasehold task cancel|signal|fork` runs). Never throws: a refusal (no such task, a step it did
 * not record, an unended child before the fork point …) becomes the outcome's `refused`.
 */
export async function applyRunAction(db: Executor, schema: string, taskId: string, a: RunAction, actor: string): Promise<RunOutcome> {
  const base = { action: a.action, taskId, ok: true, refused: null, cancelled: [], delivered: null, status: null, forkId: null };
  try {
    if (a.action === 'cancel') {
      const { cancelled } = await cancelTask(db, taskId, { reason: `${a.reason} (via the leasehold dashboard${actor})`, schema });
      if (cancelled.length === 0) return { ...base, ok: false, refused: 'The run had ended already: nothing was cancelled.' };
      return { ...base, cancelled };
    }
    if (a.action === 'signal') {
      const payload = signalPayload(a.payload);
      if (!payload.ok) return { ...base, ok: false, refused: payload.why };
      const sent = await sendSignal(db, taskId, defineSignal<unknown>(a.name), payload.value, { schema });
      return sent.delivered
        ? { ...base, delivered: true, status: sent.status }
        : { ...base, ok: false, delivered: false, status: sent.status, refused: `The run had ended (${sent.status}): the signal was not stored.` };
    }
    const fork = await forkTask(db, taskId, { fromStep: a.fromStep, schema });
    return { ...base, forkId: fork.id };
  } catch (error) {
    const known = isLeaseholdError(error);
    return { ...base, ok: false, refused: known ? toError(error).message : `The database refused it: ${toError(error).message}` };
  }
}
