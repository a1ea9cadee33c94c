// Prune of outcome notifications, with the events' cutoff: one every endpoint took, written before
// it. One still pending or failed stays, however old: it is work in flight or a dead letter
// waiting for ops. Its deliveries and their attempts go with it, in the same statement (the tables
// have no foreign keys to cascade: sql/0018 says why).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { deleteInBatches } from './batched-delete.js';

/** Deletes the delivered notifications written before `before`, in batches. */
export async function pruneDeliveredNotifications(
  db: Kysely<Database>,
  { before, batchSize }: { before: Date; batchSize: number },
): Promise<{ deleted: number; batches: number }> {
  return deleteInBatches(db, batchSize, {
    table: 'notifications',
    key: 'notification_id',
    where: sql<boolean>`created_at < ${before}
      and not exists (select 1 from notification_deliveries d where d.notification_id = notifications.notification_id and d.status <> 'delivered')`,
    alongside: sql`deliveries as (
      delete from notification_deliveries d using chosen where d.notification_id = chosen.notification_id
      returning d.delivery_id
    ), attempts as (
      delete from notification_attempts a using deliveries where a.delivery_id = deliveries.delivery_id
    )`,
  });
}
