// A run of an account under an active usage-billed plan: recorded as usage, with its report to
// the plan's meter, instead of drawing credits (the ledger asks this recorder first: docs/billing.md,
// "Usage-billed plans"). Record and report are one statement, so they are whole on a plain
// connection as in the Idempotency-Key's transaction: there is never usage without its report,
// nor a report of usage that was not recorded. Nothing calls Stripe here: the pump does, later.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { activeMeteredSubscription } from '../billing/index.js';
import type { RunRecorder } from '../ledger/index.js';

const newUsageId = () => `usage_${randomUUID().replaceAll('-', '')}`;

export const recordUsage: RunRecorder = async (db, accountId, quantity) => {
  const metered = await activeMeteredSubscription(db, accountId);
  if (!metered) return undefined;
  const { rows } = await sql<{ usage_id: string; used_at: Date }>`
    with recorded as (
      insert into usage_records (usage_id, account_id, subscription_id, event_name, quantity)
      values (${newUsageId()}, ${accountId}, ${metered.subscriptionId}, ${metered.eventName}, ${quantity})
      returning usage_id, used_at
    ), reported as (
      insert into usage_reports (usage_id, stripe_customer_id)
      select usage_id, ${metered.stripeCustomerId} from recorded
    )
    select usage_id, used_at from recorded`.execute(db);
  const recorded = rows[0]!;
  return {
    kind: 'usage',
    answer: {
      usage_id: recorded.usage_id,
      quantity,
      event_name: metered.eventName,
      subscription_id: metered.subscriptionId,
      used_at: recorded.used_at.toISOString(),
    },
  };
};
