// graphile-worker task `prune_events`, run daily by the crontab (one run per tick across workers).
import type { Task } from 'graphile-worker';
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/logger.js';
import { pruneEvents } from '../src/prune/prune-events.js';

export function pruneEventsTask({ db, logger, retentionDays }: { db: Kysely<Database>; logger: Logger; retentionDays: number }): Task {
  return async () => {
    await pruneEvents(db, { retentionDays, logger });
  };
}
