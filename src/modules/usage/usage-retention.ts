// Retention of the usage outbox, with the events' cutoff (EVENT_RETENTION_DAYS, never under 31
// days): a report sent before it goes; its usage record stays, a business record. A pending or
// failed report stays however old: work in flight, or an operator's decision waiting. The check
// past Stripe's window reads the sent reports of one minute at most 23 hours after the first send
// (report-pump.ts), long before any of them can be pruned.
import { sql, type Kysely } from 'kysely';
import { deleteInBatches, type Database, type RetentionCutoff } from '../../business-module.js';

export async function pruneSentReports(db: Kysely<Database>, { before, batchSize }: RetentionCutoff): Promise<number> {
  const { deleted } = await deleteInBatches(db, batchSize, {
    table: 'usage_reports',
    key: 'usage_id',
    where: sql<boolean>`status = 'sent' and sent_at < ${before}`,
  });
  return deleted;
}
