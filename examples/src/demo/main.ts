// npm run demo: an order service, a transactional outbox, four dispatcher workers and a
// webhook receiver, with faults. Exits 0 only if every event was applied exactly once.
import { openDatabase } from '../shared/database.js';
import { failureLine } from '../shared/failure-line.js';
import { shutdownSignal } from '../shared/shutdown.js';
import { failures, printReport } from './report.js';
import { runDemo } from './run-demo.js';
import { SHOP_SCHEMA } from './settings.js';

const signal = shutdownSignal();
let code = 1;
let database: Awaited<ReturnType<typeof openDatabase>> | undefined;
try {
  database = await openDatabase(signal);
  const result = await runDemo(database.url, signal);
  const problems = failures(result);
  printReport(result, problems);
  if (!database.throwaway) console.log(`\nThe tables are kept: try \`leasehold stats --schema ${SHOP_SCHEMA}\`.`);
  code = problems.length === 0 ? 0 : 1;
} catch (error) {
  code = 1;
  // a database that is missing or out of reach: one line that says so, not a stack
  const line = failureLine(error);
  const hint = database && !database.throwaway ? ' (check DATABASE_URL; without it the demo starts a throwaway PostgreSQL)' : '';
  if (signal.aborted) code = 130;
  else if (line === undefined) console.error('\ndemo failed:', error);
  else console.error(`\ndemo failed: ${line}${hint}`);
} finally {
  await database?.close();
}
process.exit(code);
