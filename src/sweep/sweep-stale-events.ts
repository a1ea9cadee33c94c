// The backstop sweep: re-enqueues 'processing' events whose worker died (kill -9, OOM, a
// container replaced mid-job), which graphile-worker itself would leave locked for 4 hours.
// One function, three callers: the `sweep_stale_events` cron task (SWEEP_CRON), `npm run sweep`
// and POST /admin/api/sweep. Any number of sweeps may run at once.
// Which rows it takes, and why, is documented on reclaimStaleEvents (src/events/event-store.ts).
//
// Defaults: batchSize 100 rows per statement; batches run until one comes back short or `limit`
// rows were taken.
import type { Kysely } from 'kysely';
import { recordMaintenanceRun } from '../db/maintenance-runs.js';
import type { Database } from '../db/schema.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { reclaimStaleEvents } from '../events/event-store.js';

export interface SweepOptions {
  staleAfterMs: number;
  maxAttempts: number;
  batchSize?: number;
  /** Most rows to take in this run; unlimited by default. */
  limit?: number;
  /** Report what would be reclaimed, change nothing. */
  dryRun?: boolean;
  /** Logs a line only when the sweep did something. */
  logger?: Logger;
  metrics?: Pick<Metrics, 'sweepReclaims'>;
}

export interface SweepResult {
  reclaimed: number;
  failed: number;
  batches: number;
  dry_run: boolean;
  event_ids: string[];
}


export async function sweepStaleEvents(db: Kysely<Database>, options: SweepOptions): Promise<SweepResult> {
  const batchSize = options.batchSize ?? 100;
  const result: SweepResult = { reclaimed: 0, failed: 0, batches: 0, dry_run: options.dryRun ?? false, event_ids: [] };
  for (;;) {
    // A dry run changes nothing, so it cannot page: it looks at up to `limit` rows at once.
    const size = options.dryRun ? (options.limit ?? 10_000) : batchSize;
    const room = options.limit === undefined ? size : Math.min(size, options.limit - result.reclaimed - result.failed);
    if (room <= 0) break;
    const rows = await reclaimStaleEvents(db, { ...options, limit: room });
    result.batches++;
    for (const row of rows) {
      result.event_ids.push(row.event_id);
      if (row.status === 'failed') result.failed++;
      else result.reclaimed++;
    }
    // A short batch means nothing is left.
    if (options.dryRun || rows.length < room) break;
  }
  if (!result.dry_run) {
    await recordMaintenanceRun(db, 'sweep', { reclaimed: result.reclaimed, failed: result.failed, batches: result.batches });
    options.metrics?.sweepReclaims.inc({ result: 'reclaimed' }, result.reclaimed);
    options.metrics?.sweepReclaims.inc({ result: 'failed' }, result.failed);
    if (result.reclaimed + result.failed > 0) {
      options.logger?.warn({ reclaimed: result.reclaimed, failed: result.failed, batches: result.batches }, 'sweep reclaimed abandoned events');
    }
  }
  return result;
}
