// leasehold with the expert options set by hand, for the peer benchmark harness: `prefetch` and
// `batch` from LEASEHOLD_PREFETCH / LEASEHOLD_BATCH (default 492 and 256: 500 held like
// graphile-worker's local queue, claims of a size whose plan is reused). Runs the built
// packages: `npm run build` first.
import { envCount, leaseholdDriver } from './leasehold-driver.mjs';

// eslint-disable-next-line no-restricted-syntax -- the harness loads a driver by its default export
export default leaseholdDriver({
  name: 'leasehold-expert',
  workerOptions: { prefetch: envCount('LEASEHOLD_PREFETCH', 492), batch: envCount('LEASEHOLD_BATCH', 256) },
  label: 'expert options',
});
