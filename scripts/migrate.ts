// npm run migrate: apply pending migrations (ours, then graphile-worker's) and exit. The service
// also migrates at start-up; this is for running it as a separate deploy step.
import { runScript } from '../src/cli/script.js';
import { migrate } from '../src/db/migrate.js';
import { runWorkerMigrations } from '../src/queue/worker-migrations.js';
import { serviceMigrations } from '../src/modules/index.js';

runScript({
  usage: `usage: npm run migrate -- [--json]

Applies pending migrations (sql/, the business modules' folders, then graphile-worker's own), under an advisory lock (safe to
run while other processes start). Prints what was applied.`,
  options: {},
  async run(_args, ctx) {
    const { pool } = await ctx.database();
    const { applied } = await migrate(pool, ctx.logger, await serviceMigrations(), { runWorkerMigrations });
    return { json: { applied }, text: applied.length ? `applied: ${applied.join(', ')}` : 'schema is up to date' };
  },
});
