// The ledger's HTTP, under /api: an account's quota, and its runs: using credits, listing those
// uses, reversing one. The quota counts every grant, whichever module sold it (a package, a
// subscription's paid period).
import { Router } from 'express';
import { z } from 'zod';
import type { Kysely, Transaction } from 'kysely';
import {
  badRequest,
  checkIdParam,
  createThenCall,
  optionalIdempotencyKey,
  sendResult,
  type Database,
  type HttpResult,
  type ModuleRouteContext,
} from '../../business-module.js';
import { getQuota } from './account-credits.js';
import { accountId } from './account-id.js';
import { pageQuery } from './page-query.js';
import type { ShortfallSettler } from './revocations.js';
import { consumeCredits, listRuns, reverseRun, type ConsumedRun, type RecordedRun, type RunRecorder } from './runs.js';

// More than any one run needs: a larger quantity is almost surely a mistake (an amount of money,
// a count of bytes) that would use a whole balance at once.
const MAX_QUANTITY = 1_000_000;
const quantityRule = `must be a whole number of credits from 1 to ${MAX_QUANTITY}`;
const runBody = z.strictObject({
  quantity: z.number({ error: quantityRule }).int(quantityRule).min(1, quantityRule).max(MAX_QUANTITY, quantityRule).default(1),
});
const reverseBody = z.strictObject({});
const runIdParam = z.object({
  run_id: z.string().regex(/^run_[0-9a-f]{32}$/, 'must be an id: a run_id as POST /api/accounts/:id/runs answers it (run_ and 32 hex digits)'),
});
const runList = pageQuery(runIdParam.shape.run_id);

export function ledgerApiRoutes(
  { db, idempotencyLeaseMs }: ModuleRouteContext<unknown>,
  { runRecorders, shortfallSettlers }: { runRecorders: readonly RunRecorder[]; shortfallSettlers: readonly ShortfallSettler[] },
): Router {
  const router = Router();
  router.param('id', checkIdParam);

  /**
   * A write whole in one statement, under the request's Idempotency-Key when it has one: made
   * once, in the key's transaction, and answered from what it wrote (the key's subject) to every
   * retry with the key. There is nothing to call after it: its answer follows from the subject,
   * so a retry after a crash between the commit and the answer gets the same answer once the
   * lease has run out, however late (no Stripe key to outlive).
   */
  const writeOnce = <S extends object>(
    key: string | undefined,
    request: { operation: string; request: unknown },
    steps: { write: (db: Kysely<Database>) => Promise<{ subject: S } | HttpResult>; answer: (subject: S) => HttpResult },
  ) =>
    createThenCall(db, key, {
      ...request,
      leaseMs: idempotencyLeaseMs,
      callsStripe: false,
      create: steps.write,
      complete: (subject: S) => Promise.resolve(steps.answer(subject)),
    });

  router.get('/accounts/:id/quota', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    res.json(await getQuota(db, id.data));
  });

  // Apps should send an Idempotency-Key: without one, a retry after a timeout uses the credits
  // (or reports the usage) twice. With one, the run is made once, in the key's transaction, and a
  // retry is answered with it. Optional, because runs took no key before. A recorder (a
  // usage-billed plan's) is asked first: an account it records for draws no credits.
  router.post('/accounts/:id/runs', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    const body = runBody.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const key = optionalIdempotencyKey(req);
    if (!key.success) return badRequest(res, key.error);
    const account = id.data;
    const { quantity } = body.data;
    sendResult(
      res,
      await writeOnce(
        key.data,
        { operation: 'run', request: [account, quantity] },
        {
          async write(tx): Promise<{ subject: ConsumedRun | RecordedRun } | HttpResult> {
            for (const record of runRecorders) {
              const recorded = await record(tx, account, quantity);
              if (recorded) return { subject: recorded };
            }
            const run = await consumeCredits(tx, account, quantity);
            return run ? { subject: run } : notEnoughCredits(quantity);
          },
          // A run that drew credits is kept under the key as a ConsumedRun, which has no kind, in every release.
          answer: (run: ConsumedRun | RecordedRun) => ({
            status: 201,
            body: 'kind' in run ? { kind: run.kind, ...run.answer } : { kind: 'credits', remaining: run.remaining, run_id: run.runId, quantity: run.quantity },
          }),
        },
      ),
    );
  });

  router.get('/accounts/:id/runs', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    const query = runList.safeParse(req.query);
    if (!query.success) return badRequest(res, query.error);
    const page = await listRuns(db, id.data, { limit: query.data.limit, after: query.data.cursor });
    if (!page) return void res.status(400).json({ error: 'cursor: names no run of this account; pass the next_cursor of the previous page' });
    res.json({ account_id: id.data, runs: page.runs, next_cursor: page.nextCursor });
  });

  // Gives a run's credits back, once, less what refunds and disputes of the account's purchases
  // could not take back while they were in use (credits_revoked). A second reversal of the run
  // with another key (or none) is a 409 naming when it was reversed; with the first's key, the
  // first's answer is replayed.
  router.post('/accounts/:id/runs/:run_id/reverse', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    const run = runIdParam.safeParse({ run_id: req.params.run_id });
    if (!run.success) return badRequest(res, run.error);
    const body = reverseBody.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const key = optionalIdempotencyKey(req);
    if (!key.success) return badRequest(res, key.error);
    const account = id.data;
    const runId = run.data.run_id;
    sendResult(
      res,
      await writeOnce(
        key.data,
        { operation: 'run-reverse', request: [account, runId] },
        {
          async write(tx) {
            const reversal = await inTransaction(tx, (t) => reverseRun(t, account, runId, shortfallSettlers));
            switch (reversal.outcome) {
              case 'not_found':
                return { status: 404, body: { error: `account ${account} has no run ${runId}` } };
              case 'already_reversed':
                return {
                  status: 409,
                  body: {
                    error: 'run already reversed: its credits were given back then, and are not given back twice',
                    run_id: runId,
                    reversed_at: reversal.reversedAt,
                  },
                };
              case 'reversed': {
                const { quantity, revoked, remaining } = reversal;
                return { subject: { runId, quantity, revoked, remaining, reversedAt: reversal.reversedAt.toISOString() } };
              }
            }
          },
          // A reversal kept under its key by a release before credits/0048 has no revoked: it revoked nothing (docs/migrations.md, C5).
          answer: (reversed: { runId: string; quantity: number; revoked?: number; remaining: number; reversedAt: string }) => ({
            status: 200,
            body: {
              run_id: reversed.runId,
              quantity: reversed.quantity,
              reversed_at: reversed.reversedAt,
              remaining: reversed.remaining,
              credits_revoked: reversed.revoked ?? 0,
            },
          }),
        },
      ),
    );
  });

  return router;
}

/** Runs `work` in `db` when it is a transaction already (an Idempotency-Key's), else in a new one. */
const inTransaction = <T>(db: Kysely<Database>, work: (tx: Transaction<Database>) => Promise<T>): Promise<T> =>
  db.isTransaction ? work(db as Transaction<Database>) : db.transaction().execute(work);

function notEnoughCredits(quantity: number): HttpResult {
  const left = quantity === 1 ? 'no credits left' : `fewer than ${quantity} credits left`;
  return { status: 402, body: { error: `${left}, nothing was used: buy a package via POST /api/checkout` } };
}
