// Every workload, in the order the bench runs them within a round.
import type { Workload } from '../lib/workload.js';
import { BROKER_WORKLOADS } from './broker-publish.js';
import { claimBlocked } from './claim-blocked.js';
import { claimCost } from './claim-cost.js';
import { claimLimits } from './claim-limits.js';
import { dashboardPaging } from './dashboard-paging.js';
import { enqueueBulk, enqueueSingle } from './enqueue.js';
import { heartbeat } from './heartbeat.js';
import { latency } from './latency.js';
import { ON_TIME_WORKLOADS } from './on-time.js';
import { outboxOrdered, outboxUnordered } from './outbox.js';
import { pinnedHorizon } from './pinned-horizon.js';
import { process1x8, process2x4, processOtel } from './process.js';
import { retention } from './retention.js';
import { workflowDbSteps, workflowSteps } from './workflow.js';

export const WORKLOADS: readonly Workload[] = [
  enqueueSingle,
  enqueueBulk,
  process1x8,
  processOtel,
  process2x4,
  workflowSteps,
  workflowDbSteps,
  latency,
  outboxUnordered,
  outboxOrdered,
  ...BROKER_WORKLOADS,
  heartbeat,
  claimCost,
  claimBlocked,
  claimLimits,
  dashboardPaging,
  retention,
  // only with --only pinned-horizon: about 8 minutes per system
  pinnedHorizon,
  // only with --only <name>: issue 32, on time (sleep-lateness, scheduled-lateness, retry-lateness, idle-cost, limits-mix, limit-concurrency)
  ...ON_TIME_WORKLOADS,
];
