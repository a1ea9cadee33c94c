// Delivered notifications go with the events' retention (src/prune/prune-events.ts): one every
// endpoint took, written before the cutoff. One still pending or failed stays, however old: it is
// work in flight or a dead letter waiting for ops. Its deliveries and their attempts go with it,
// in the same statement (the tables have no foreign keys to cascade: sql/0018 says why).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** Deletes one batch of delivered notifications written before `createdBefore`. Returns how many. */
export async function pruneDeliveredNotifications(db: Kysely<Database>, options: { createdBefore: Date; limit: number }): Promise<number> {
  const { rows } = await sql<{ deleted: number }>`
    with chosen as (
      select n.notification_id from notifications n
      where n.created_at < ${options.createdBefore}
        and not exists (select 1 from notification_deliveries d where d.notification_id = n.notification_id and d.status <> 'delivered')
      limit ${options.limit}
      for update skip locked
    ), deliveries as (
      delete from notification_deliveries d using chosen where d.notification_id = chosen.notification_id
      returning d.delivery_id
    ), attempts as (
      delete from notification_attempts a using deliveries where a.delivery_id = deliveries.delivery_id
    ), deleted as (
      delete from notifications n using chosen where n.notification_id = chosen.notification_id
      returning 1
    )
    select count(*)::int as deleted from deleted`.execute(db);
  return rows[0]?.deleted ?? 0;
}
