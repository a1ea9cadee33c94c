// Reading a customer's whole set of active entitlements from Stripe, when a summary cannot be
// applied as it came: its `entitlements` list is only a first page (`has_more`; peers that apply
// the page lose every entitlement past it), a thin notification's summary, or a tie with another
// summary of the same second (mirror.ts). A module job, outside any transaction: it pages through
// GET /v1/entitlements/active_entitlements (100 a page, Stripe's largest, by `starting_after`)
// through the bounded Stripe calls, then applies the whole set in one transaction, stamped with
// the second the read began.
import type { Task } from 'graphile-worker';
import type { Transaction } from 'kysely';
import { z } from 'zod';
import { addModuleJob, modeMismatch, type Database, type ModuleContext } from '../../business-module.js';
import { accountOfCustomer } from '../ledger/index.js';
import { applyCustomerSet } from './mirror.js';
import { activeEntitlementPage, entitlementsOf, type Entitlement } from './stripe-schemas.js';

export const FULL_READ_TASK = 'entitlements_read_active';
// Stripe may be down for a while; the job retries with graphile-worker's backoff meanwhile.
const FULL_READ_MAX_ATTEMPTS = 12;
/** Stripe's largest page of a list. */
const PAGE_SIZE = 100;

/**
 * Queues a full read of the customer's active entitlements, in the caller's transaction; a burst
 * makes one job. `inSeconds`: not before then (a read that tied waits for the next second).
 */
export async function requestFullRead(tx: Transaction<Database>, customerId: string, inSeconds = 0): Promise<void> {
  await addModuleJob(tx, FULL_READ_TASK, { customerId }, { key: `${FULL_READ_TASK}:${customerId}`, maxAttempts: FULL_READ_MAX_ATTEMPTS, inSeconds });
}

const readPayload = z.object({ customerId: z.string() });

/** graphile-worker task: reads every active entitlement of the customer and applies them as of when the read began. */
export function fullReadTask({ db, stripeCalls, livemode, logger, notifications }: ModuleContext<unknown>): Task {
  return async (payload) => {
    const job = readPayload.safeParse(payload);
    if (!job.success) return void logger.error({ payload }, 'entitlements read without a customer: dropped');
    const { customerId } = job.data;
    const began = new Date();
    const entitlements: Entitlement[] = [];
    let pages = 0;
    for (let startingAfter: string | undefined; ;) {
      // A busy or failing Stripe throws here: graphile-worker retries the job with its backoff.
      const answer = await stripeCalls.run('active_entitlements_list', (stripe) =>
        stripe.entitlements.activeEntitlements.list({
          customer: customerId,
          limit: PAGE_SIZE,
          expand: ['data.feature'],
          ...(startingAfter !== undefined && { starting_after: startingAfter }),
        }),
      );
      // One entitlement of the other mode and the set read is not this customer's in our mode:
      // none of it is applied, and reading again cannot change that.
      const stray = answer.data.find((entitlement) => entitlement.livemode !== livemode);
      if (stray !== undefined) {
        return void logger.error({ customerId }, `${modeMismatch(`active entitlement ${stray.id}`, stray.livemode, livemode)}: none applied`);
      }
      const page = activeEntitlementPage.parse(answer);
      pages += 1;
      entitlements.push(...entitlementsOf(page));
      if (!page.has_more || page.data.length === 0) break;
      startingAfter = page.data.at(-1)!.id;
    }
    const change = await db.transaction().execute(async (tx) => {
      const accountId = await accountOfCustomer(tx, customerId);
      if (accountId === undefined) return undefined;
      const applied = await applyCustomerSet(tx, { customerId, accountId, entitlements, at: began, eventId: null, notifications });
      if (applied === 'tie') await requestFullRead(tx, customerId, 1);
      return applied;
    });
    logger.info({ customerId, pages, entitlements: entitlements.length, change: change ?? 'not linked to an account' }, 'active entitlements read from Stripe');
  };
}
