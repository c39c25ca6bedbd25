import type { Generated } from 'kysely';

/** The demo's own tables, for Kysely. The outbox and inbox tables belong to leasehold. */
export interface DemoDatabase {
  /** The order service's business table. */
  'leasehold_demo.orders': {
    id: Generated<string>;
    customer: string;
    total_cents: number;
    status: 'placed' | 'paid';
    created_at: Generated<Date>;
  };
  /** What the receiving service did with each event: one row per application (no unique key, on purpose). */
  'leasehold_demo_receiver.applied': {
    event_id: string;
    order_id: string;
    event_type: string;
    /** `x-demo-worker` of the delivery that got applied. */
    worker: string;
    applied_at: Generated<Date>;
  };
}
