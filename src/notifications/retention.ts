// Delivered notifications go with the events' retention (src/prune/prune-events.ts): one every
// endpoint took, written before the cutoff. One still pending or failed stays, however old: it is
// work in flight or a dead letter waiting for ops. Deliveries and attempts go with it (cascade).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** Deletes one batch of delivered notifications written before `createdBefore`. Returns how many. */
export async function pruneDeliveredNotifications(db: Kysely<Database>, options: { createdBefore: Date; limit: number }): Promise<number> {
  const { numDeletedRows } = await db
    .deleteFrom('notifications')
    .where('notification_id', 'in', (qb) =>
      qb
        .selectFrom('notifications as n')
        .select('n.notification_id')
        .where('n.created_at', '<', options.createdBefore)
        .where((eb) =>
          eb.not(eb.exists(eb.selectFrom('notification_deliveries as d').select(sql`1`.as('one')).whereRef('d.notification_id', '=', 'n.notification_id').where('d.status', '<>', 'delivered'))),
        )
        .limit(options.limit)
        .forUpdate()
        .skipLocked(),
    )
    .executeTakeFirst();
  return Number(numDeletedRows);
}
