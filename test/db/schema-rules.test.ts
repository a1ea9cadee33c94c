// The database enforces the rules. Each illegal write below is raw SQL, past every
// TypeScript check, and Postgres itself refuses it with the named constraint. A legal write of
// the same shape goes through first, so a refusal cannot come from a broken statement.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql, type RawBuilder } from 'kysely';
import { databaseForFile } from '../support/database.js';
import { givenOrder } from '../support/factories.js';

const database = databaseForFile();

const CHECK_VIOLATION = '23514';
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

async function assertRefused(statement: RawBuilder<unknown>, code: string, constraint: string): Promise<void> {
  await assert.rejects(statement.execute(database.db), (error: { code?: string; constraint?: string }) => {
    assert.equal(error.code, code);
    assert.equal(error.constraint, constraint);
    return true;
  });
}

let events = 0;
/** An insert into stripe_events with the given lifecycle columns. */
function insertEvent(columns: { status: string; finished?: true; last_error?: string }, id = `evt_schema_${++events}`) {
  return sql`insert into stripe_events (event_id, type, object_id, livemode, stripe_created_at, payload, status, finished_at, last_error)
             values (${id}, 'charge.succeeded', 'ch_1', false, now(), '{}', ${columns.status},
                     ${columns.finished ? sql`now()` : null}, ${columns.last_error ?? null})`;
}

describe('stripe_events state machine', () => {
  test('a processed event must have finished_at', async () => {
    await insertEvent({ status: 'processed', finished: true }).execute(database.db);
    await assertRefused(insertEvent({ status: 'processed' }), CHECK_VIOLATION, 'stripe_events_finished_when_not_processing');
  });

  test('a processing event must not have finished_at', async () => {
    await insertEvent({ status: 'processing' }).execute(database.db);
    await assertRefused(insertEvent({ status: 'processing', finished: true }), CHECK_VIOLATION, 'stripe_events_finished_when_not_processing');
  });

  test('a failed event must carry its last error', async () => {
    await insertEvent({ status: 'failed', finished: true, last_error: 'boom' }).execute(database.db);
    await assertRefused(insertEvent({ status: 'failed', finished: true }), CHECK_VIOLATION, 'stripe_events_failed_has_error');
  });

  test('an unknown status is refused', async () => {
    await assertRefused(insertEvent({ status: 'done', finished: true }), CHECK_VIOLATION, 'stripe_events_status_known');
  });

  test('an UPDATE to an illegal state is refused as well as an INSERT', async () => {
    await insertEvent({ status: 'processing' }, 'evt_schema_update').execute(database.db);
    await assertRefused(
      sql`update stripe_events set status = 'processed' where event_id = 'evt_schema_update'`,
      CHECK_VIOLATION,
      'stripe_events_finished_when_not_processing',
    );
  });
});

describe('the credit ledger', () => {
  test('an order is granted at most once: a second credit_grants row is a unique violation', async () => {
    const order = await givenOrder(database);
    const grant = (eventId: string) =>
      sql`insert into credit_grants (order_id, account_id, credits, event_id) values (${order.order_id}, ${order.account_id}, 40, ${eventId})`;
    await grant('evt_first').execute(database.db);
    // A second Event object for the same payment, under a new id: still refused.
    await assertRefused(grant('evt_second'), UNIQUE_VIOLATION, 'credit_grants_pkey');
  });

  test('an account cannot use more credits than it was granted', async () => {
    const accountId = `acct_schema_${process.pid}`;
    await sql`insert into account_credits (account_id, granted, used) values (${accountId}, 2, 2)`.execute(database.db);
    await assertRefused(
      sql`update account_credits set used = used + 1 where account_id = ${accountId}`,
      CHECK_VIOLATION,
      'account_credits_used_within_granted',
    );
  });

  test('a run uses a positive quantity of an existing balance', async () => {
    const accountId = `acct_schema_runs_${process.pid}`;
    await sql`insert into account_credits (account_id, granted) values (${accountId}, 2)`.execute(database.db);
    const run = (runId: string, account: string, quantity: number) =>
      sql`insert into account_runs (run_id, account_id, quantity) values (${runId}, ${account}, ${quantity})`;
    await run('run_schema_legal', accountId, 1).execute(database.db);
    await assertRefused(run('run_schema_zero', accountId, 0), CHECK_VIOLATION, 'account_runs_quantity_positive');
    await assertRefused(run('run_schema_no_balance', `${accountId}_none`, 1), FOREIGN_KEY_VIOLATION, 'account_runs_account_id_fkey');
  });
});

describe('orders', () => {
  test('a paid order must have paid_at', async () => {
    const order = await givenOrder(database);
    await assertRefused(sql`update orders set status = 'paid' where order_id = ${order.order_id}`, CHECK_VIOLATION, 'orders_paid_at_when_paid');
    await sql`update orders set status = 'paid', paid_at = now() where order_id = ${order.order_id}`.execute(database.db);
  });
});

describe('subscriptions', () => {
  test("a subscription's price is a positive amount in a lower-case ISO currency, as its plan's", async () => {
    const insert = (id: string, amount: number, currency: string) =>
      sql`insert into subscriptions (subscription_id, plan_id, account_id, amount, currency, credits)
          values (${id}, 'pro_monthly', 'acct_schema_subscriptions', ${amount}, ${currency}, 100)`;
    await insert('sub_schema_legal', 1900, 'chf').execute(database.db);
    await assertRefused(insert('sub_schema_free', 0, 'chf'), CHECK_VIOLATION, 'subscriptions_amount_positive');
    await assertRefused(insert('sub_schema_upper', 1900, 'CHF'), CHECK_VIOLATION, 'subscriptions_currency_iso');
  });
});

describe('admin sessions', () => {
  test('a session expires after it starts, and is revoked no earlier than it starts', async () => {
    const insert = (digest: string, expires: RawBuilder<unknown>, revoked: RawBuilder<unknown> | null = null) =>
      sql`insert into admin_sessions (session_digest, expires_at, revoked_at) values (${digest}, ${expires}, ${revoked})`;
    await insert('digest-legal', sql`now() + interval '12 hours'`, sql`now()`).execute(database.db);
    await assertRefused(insert('digest-expired-at-birth', sql`now()`), CHECK_VIOLATION, 'admin_sessions_expire_after_start');
    await assertRefused(
      insert('digest-revoked-before', sql`now() + interval '12 hours'`, sql`now() - interval '1 second'`),
      CHECK_VIOLATION,
      'admin_sessions_revoked_after_start',
    );
  });
});
