// Group commit for webhook claims (src/db/group-commit.ts). Deliveries that arrive while a claim
// transaction is in flight wait for it and share the next one: one statement inserting the rows
// and adding their jobs, one commit. Each is answered only after the commit that holds it, so a
// 2xx still means "stored, with its job" (docs/design.md, invariant 1).
//
// Why: add_jobs ends in pg_notify, and Postgres serialises notifying commits database-wide (a
// global lock held through the commit's flush). One claim per transaction therefore caps ingest at
// one commit's flush per request however many connections there are; sharing transactions pays that
// lock once per batch (docs/benchmarks.md, "What bounds each number").
//
// A claim not committed within claimTimeoutMs is answered with an error (the route's 503). That
// bounds a request when the database hangs instead of refusing (a network partition, a frozen
// host: nothing on the client side bounds a query on an open connection). If that transaction
// commits after all, Stripe's retry is simply answered as a duplicate. A delivery still queued
// behind a hung transaction when it times out is dropped with its body, so a hang does not hold
// every later body in memory; Stripe's retry brings it again.
import { SpanKind } from '@opentelemetry/api';
import type { Kysely } from 'kysely';
import { GroupCommit } from '../db/group-commit.js';
import { isDatabaseUnavailable } from '../db/pg-errors.js';
import type { Database } from '../db/schema.js';
import { inSpan, linksTo, tracingOn } from '../tracing/trace-context.js';
import { claimEvents, type ClaimOptions, type ClaimOutcome, type IncomingEvent } from './event-store.js';

export interface ClaimBatcherOptions extends ClaimOptions {
  /** Most deliveries in one transaction (bounds statement size and the lock held). */
  maxBatch?: number;
  /**
   * Claim transactions open at once. One: the next batch forms while a commit is in flight, and
   * notifying commits serialise anyway; more split the batches and each commit waits for the
   * other's (docs/benchmarks.md, "What bounds each number").
   */
  maxInFlight?: number;
  /** Longest a delivery waits for its commit; well under Stripe's own webhook timeout. */
  claimTimeoutMs?: number;
}

export class ClaimTimeoutError extends Error {
  constructor(ms: number) {
    super(`claim not committed within ${ms} ms: the database is too slow or unreachable`);
    this.name = 'ClaimTimeoutError';
  }
}

export class ClaimBatcher {
  readonly #group: GroupCommit<IncomingEvent, ClaimOutcome>;

  constructor(db: Kysely<Database>, options: ClaimBatcherOptions) {
    const timeoutMs = options.claimTimeoutMs ?? 10_000;
    const claim = (events: IncomingEvent[]) => claimEvents(db, events, options);
    this.#group = new GroupCommit((events) => (tracingOn() ? tracedClaim(events, claim) : claim(events)), {
      maxBatch: options.maxBatch ?? 200,
      maxInFlight: options.maxInFlight ?? 1,
      // The database is away: every delivery gets its 503 now, none retried here. Anything else
      // may be one bad row: claim each alone so it fails without its neighbours.
      retryAlone: (error) => !isDatabaseUnavailable(error),
      timeoutMs,
      timeoutError: () => new ClaimTimeoutError(timeoutMs),
    });
  }

  /** Resolves after the transaction holding this event has committed. */
  claim(event: IncomingEvent): Promise<ClaimOutcome> {
    return this.#group.submit(event);
  }

  /** Resolves when no claim is queued or in flight, or after `maxWaitMs`. */
  whenIdle(maxWaitMs: number): Promise<void> {
    return this.#group.whenIdle(maxWaitMs);
  }

  /** The share of the recent past with a claim transaction open (src/db/group-commit.ts). */
  busyShare(): number {
    return this.#group.busyShare();
  }

  /** Transactions and events committed so far: events / transactions is the mean batch size. */
  get stats(): { transactions: number; events: number } {
    const { transactions, items } = this.#group.stats;
    return { transactions, events: items };
  }
}

/** One span per claim transaction, linked to the request span of every delivery it holds. */
function tracedClaim(events: IncomingEvent[], claim: (events: IncomingEvent[]) => Promise<ClaimOutcome[]>): Promise<ClaimOutcome[]> {
  const attributes = { 'db.system.name': 'postgresql', 'stripe_inbox.batch.size': events.length };
  return inSpan('claim stripe_events', { kind: SpanKind.INTERNAL, attributes, links: linksTo(events.map((e) => e.traceparent)) }, () => claim(events));
}
