// The caller's Idempotency-Key on the POST routes that create something through Stripe (a
// checkout, a refund), honoured like Stripe honours ours: the same key and body replay the first
// successful response; the same key with another body is a 422; the same key while the first
// request is still running is a 409. What the key names — its subject, the module's JSON: a new
// order, the next refund of an order — is created once, in the transaction that registers the
// key, so every retry works on the same thing and sends Stripe the same outbound key.
//
// "Still running" is a lease: a committed `leased_until` on the key's row, taken in one short
// transaction before the request calls Stripe and cleared in another after. No connection or
// transaction is held across the call, so a slow Stripe cannot take the pool with it; a request
// that dies leaves a lease that expires, after which a retry proceeds. If a lease runs out while
// its request is still waiting on Stripe, a retry may call Stripe at the same time: harmless,
// because both send the same outbound Idempotency-Key.
//
// Keys are scoped by operation (stored as `<operation>:<key>`): a key used for a checkout and the
// same key used for a refund are two keys, so one caller cannot squat another's.
//
// A retry is safe only while Stripe still knows our outbound key: it keeps keys for 24 hours, and
// after that the same request is a new one to Stripe. A key whose first request ended without an
// answer we kept (a timeout, a 502: it may have reached Stripe) is therefore refused once it is
// older than OUTBOUND_KEY_WINDOW_MS: retrying it could refund or charge twice.
import { createHash } from 'node:crypto';
import type { Response } from 'express';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { StripeCallFailure } from '../stripe/stripe-calls.js';

export interface HttpResult {
  status: number;
  body: Record<string, unknown>;
  /** Sent as Retry-After with a 503. */
  retryAfterSeconds?: number;
}

/** What a key names: JSON the module reads back on every retry with the key. */
export type KeySubject = object;

export interface IdempotentRequest<S extends KeySubject> {
  key: string;
  /** The module's name for what the key is for ('checkout'): lower case, digits, - and _. */
  operation: string;
  /** Everything that identifies the request; hashed and compared on reuse. */
  request: unknown;
  /** How long a request may hold the key before a retry with it may proceed. */
  leaseMs: number;
  /**
   * True when the module numbers something by this operation's keys (countKeys counts only such
   * keys): they are then kept for good. Other keys are pruned with the events, after which a
   * retry with the same key is a new request.
   */
  counted?: boolean;
  /**
   * False when `execute` calls nobody (a run: its answer follows from what `register` wrote).
   * Only a key whose request may have reached Stripe is refused once Stripe has forgotten it.
   */
  callsStripe?: boolean;
  /** Creates what a new key names, or refuses with a result (nothing is registered then). */
  register: (tx: Transaction<Database>) => Promise<{ subject: S } | HttpResult>;
  /** Runs while this request holds the lease, outside any transaction; a 2xx result is kept for replays. */
  execute: (subject: S) => Promise<HttpResult>;
}

export const requestHash = (request: unknown) => createHash('sha256').update(JSON.stringify(request)).digest('hex');

/**
 * The answer to a request whose call to Stripe did not go through: 503 with Retry-After when no
 * call slot was free, 502 when Stripe failed; either way the same Idempotency-Key retries it.
 * `what` names the call ("create the checkout session"); `ids` name what was created before it.
 */
export function stripeCallFailed(failure: StripeCallFailure, what: string, ids: Record<string, string>): HttpResult {
  if (failure.outcome === 'stripe_busy') {
    return { status: 503, body: { error: 'too many calls to Stripe in flight; retry shortly', ...ids }, retryAfterSeconds: 2 };
  }
  return { status: 502, body: { error: `Stripe could not ${what} (${failure.reason}); retry with the same Idempotency-Key`, ...ids } };
}

const IN_FLIGHT: HttpResult = { status: 409, body: { error: 'a request with this Idempotency-Key is still in progress; retry shortly' } };

/** Stripe keeps an idempotency key for 24 hours; an hour's margin for the call itself and clocks. */
const OUTBOUND_KEY_WINDOW_MS = 23 * 3600 * 1000;

const PAST_STRIPE_WINDOW: HttpResult = {
  status: 422,
  body: {
    error:
      "this Idempotency-Key's first request may have reached Stripe more than 23 hours ago, and Stripe has forgotten its own key since: " +
      'a retry could do it twice. Check in Stripe whether it was done; if not, send the request with a new Idempotency-Key',
  },
};

export async function runIdempotent<S extends KeySubject>(db: Kysely<Database>, request: IdempotentRequest<S>): Promise<HttpResult> {
  const key = `${request.operation}:${request.key}`;
  const lease = await takeLease(db, key, request);
  if ('status' in lease) return lease;
  const release = (result?: HttpResult) =>
    db
      .updateTable('api_idempotency_keys')
      // Only success is kept: after a 502 the same key must reach Stripe again.
      .set(
        result && result.status >= 200 && result.status < 300
          ? { leased_until: null, response_status: result.status, response_body: JSON.stringify(result.body) }
          : { leased_until: null },
      )
      // Our lease only: if it ran out and a retry took the key, the retry finishes it.
      .where('idempotency_key', '=', key)
      .where('leased_until', '=', lease.leasedUntil)
      .execute();
  let result: HttpResult;
  try {
    result = await request.execute(lease.subject);
  } catch (error) {
    await release().catch(() => {});
    throw error;
  }
  await release(result);
  return result;
}

class KeyTakenError extends Error {}

/**
 * How many keys of `operation` name a subject containing `match` (e.g. the refunds of one order).
 * Only keys registered with `counted: true`, which prune never deletes: an operation registered
 * without it counts nothing, at once, rather than miscounting once its keys are pruned.
 */
export async function countKeys(tx: Transaction<Database>, operation: string, match: KeySubject): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from api_idempotency_keys
    where operation = ${operation} and counted and subject @> ${JSON.stringify(match)}::jsonb`.execute(tx);
  return rows[0]!.n;
}

/** Registers a new key, or leases an existing one that is not in flight; else the answer to give. */
async function takeLease<S extends KeySubject>(
  db: Kysely<Database>,
  key: string,
  request: IdempotentRequest<S>,
): Promise<{ subject: S; leasedUntil: Date } | HttpResult> {
  const hash = requestHash(request.request);
  // Whole milliseconds: the lease's end comes back as a JavaScript Date and names the lease when it is released.
  const until = sql<Date>`date_trunc('milliseconds', now() + make_interval(secs => ${request.leaseMs / 1000}))`;
  // Twice at most: a first attempt loses only to a request that registered the same key meanwhile.
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      return await db.transaction().execute(async (tx) => {
        // A short wait at most: other requests hold this lock only for their own short transaction.
        const row = await tx
          .selectFrom('api_idempotency_keys')
          .select([
            'operation',
            'request_hash',
            'response_status',
            'response_body',
            'subject',
            sql<boolean>`created_at < now() - make_interval(secs => ${OUTBOUND_KEY_WINDOW_MS / 1000})`.as('past_window'),
          ])
          .where('idempotency_key', '=', key)
          .forUpdate()
          .executeTakeFirst();
        if (!row) {
          const registered = await request.register(tx);
          if ('status' in registered) return registered;
          const inserted = await tx
            .insertInto('api_idempotency_keys')
            .values({
              idempotency_key: key,
              operation: request.operation,
              request_hash: hash,
              subject: JSON.stringify(registered.subject),
              response_status: null,
              response_body: null,
              leased_until: until,
              counted: request.counted === true,
            })
            .onConflict((oc) => oc.column('idempotency_key').doNothing())
            .returning('leased_until')
            .executeTakeFirst();
          // Another request registered the key between our look and our insert: undo our subject.
          if (!inserted?.leased_until) throw new KeyTakenError();
          return { subject: registered.subject, leasedUntil: inserted.leased_until };
        }
        if (row.operation !== request.operation || row.request_hash !== hash) {
          return { status: 422, body: { error: 'Idempotency-Key was already used with a different request; use a new key' } };
        }
        if (row.response_status !== null) return { status: row.response_status, body: row.response_body as Record<string, unknown> };
        if (row.past_window && request.callsStripe !== false) return PAST_STRIPE_WINDOW;
        const leased = await tx
          .updateTable('api_idempotency_keys')
          .set({ leased_until: until })
          .where('idempotency_key', '=', key)
          .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<=', sql<Date>`now()`)]))
          .returning('leased_until')
          .executeTakeFirst();
        if (!leased?.leased_until) return IN_FLIGHT;
        return { subject: row.subject as S, leasedUntil: leased.leased_until };
      });
    } catch (error) {
      if (!(error instanceof KeyTakenError)) throw error;
    }
  }
  return IN_FLIGHT;
}

/**
 * A POST that creates something (an order, a subscription) and then calls Stripe for it. With the
 * caller's Idempotency-Key, through runIdempotent: the thing is created once, in the key's
 * transaction, and every retry completes that one. Without a key, created and completed once.
 */
export async function createThenCall<S extends KeySubject>(
  db: Kysely<Database>,
  key: string | undefined,
  request: Pick<IdempotentRequest<S>, 'operation' | 'request' | 'leaseMs' | 'callsStripe'> & {
    /** Creates the subject in `db` (the key's transaction, when there is a key), or refuses with an answer. */
    create: (db: Kysely<Database>) => Promise<{ subject: S } | HttpResult>;
    /** Calls Stripe for the subject, outside any transaction. */
    complete: (subject: S) => Promise<HttpResult>;
  },
): Promise<HttpResult> {
  if (key === undefined) {
    const created = await request.create(db);
    return 'status' in created ? created : request.complete(created.subject);
  }
  return runIdempotent(db, { ...request, key, register: request.create, execute: request.complete });
}

/** Sends a result, with Retry-After when it has one. */
export function sendResult(res: Response, result: HttpResult): void {
  if (result.retryAfterSeconds !== undefined) res.set('Retry-After', String(result.retryAfterSeconds));
  res.status(result.status).json(result.body);
}
