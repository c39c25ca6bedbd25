import type { OutboxMessage } from '@leasehold/adapters-http';

let next = 1;

/** An outbox message as the dispatcher would hand it over; a fresh id unless given. */
export function makeMessage(overrides: Partial<OutboxMessage> = {}): OutboxMessage {
  return {
    id: String(next++),
    key: 'order-7',
    aggregateType: 'order',
    eventType: 'order.placed',
    payload: { amount: 42, currency: 'EUR' },
    headers: {},
    attempts: 1,
    createdAt: new Date('2025-01-01T12:00:00.000Z'),
    ...overrides,
  };
}

/** A signal that never fires, as a dispatcher that keeps its lease would pass. */
export const quiet: { signal: AbortSignal } = { signal: new AbortController().signal };

/** What a rejected promise threw (fails the test if it resolved). */
export async function rejection(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await promise;
  } catch (error) {
    return error as Error & Record<string, unknown>;
  }
  throw new Error('expected a rejection');
}
