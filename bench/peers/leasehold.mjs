// leasehold at its library defaults, for the peer benchmark harness (/work/shared/bench-peers):
//
//   node run.mjs --systems /work/main/bench/peers/leasehold.mjs,/work/main/bench/peers/leasehold-expert.mjs,graphile-worker,raw-pg
//
// `createWorker({ pool, tasks, schema, concurrency })` and nothing else: the worker sizes its
// claims and its buffer itself. Runs the built packages: `npm run build` first.
import { leaseholdDriver } from './leasehold-driver.mjs';

// eslint-disable-next-line no-restricted-syntax -- the harness loads a driver by its default export
export default leaseholdDriver({ name: 'leasehold', workerOptions: {}, label: 'library defaults (sized by the worker)' });
