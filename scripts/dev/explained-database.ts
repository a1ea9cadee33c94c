// Captures the real plans of the statements a piece of service code runs, without copying its
// SQL: a one-connection database whose session loads auto_explain and sends its LOG lines to
// the client. Needs a superuser (LOAD); without one, `plans` stays empty and says why. Used by
// the sweep bench and by tests that hold a statement to the rows it may read.
import { openDatabase, type Db } from '../../src/db/database.js';

export interface ExplainedDb extends Db {
  /** Every plan logged so far ("Query Text: …" then the plan), newest last. */
  readonly plans: string[];
  /** Why there are no plans, if auto_explain could not be loaded. */
  readonly problem: () => string | undefined;
}

export function openExplainedDatabase(url: string): ExplainedDb {
  const db = openDatabase(url, { maxConnections: 1, applicationName: 'stripe-inbox-bench-explain' });
  const plans: string[] = [];
  let problem: string | undefined;
  db.pool.on('connect', (client) => {
    client.on('notice', (notice) => {
      if (notice.message?.includes('Query Text:')) plans.push(notice.message);
    });
    // Queued on the connection before any query the pool hands it out for.
    client
      .query(`load 'auto_explain'; set auto_explain.log_min_duration = 0; set auto_explain.log_analyze = on; set client_min_messages = log`)
      .catch((error: Error) => (problem = `auto_explain unavailable: ${error.message}`));
  });
  return { ...db, plans, problem: () => problem };
}
