// `npm run bench -- statements`: how many statements the hot path sends to Postgres per event, a
// count rather than a time, so it holds on a noisy host and in CI's smoke mode alike. Claims as the
// webhook makes them (claimEvents) and fulfilments of checkout.session.completed as the worker runs
// them (fulfilEvents), each alone and in a job's batch, counted at the pg client (every round trip:
// BEGIN and COMMIT included). Each figure is held to the budget in bench/statement-budget.json:
// over it, the part fails and so does CI. A change that adds a statement to the hot path says so by
// raising the budget in its own commit (docs/benchmarks.md).
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { claimEvents } from '../../src/events/event-store.js';
import { waker } from '../../src/events/event-waits.js';
import { createDispatch } from '../../src/fulfilment/dispatch.js';
import { fulfilEvents } from '../../src/fulfilment/fulfil-event.js';
import { attachCheckoutSession, createOrder } from '../../src/modules/credits/orders.js';
import { businessModules, loadServiceConfig } from '../../src/modules/index.js';
import { createOutbox } from '../../src/notifications/outbox.js';
import { createBenchDatabase, type BenchDatabase } from '../support/database.js';
import type { BenchOptions } from '../support/options.js';
import type { Figure } from '../support/report.js';
import { serviceEnv } from '../support/service-env.js';
import { BENCH_PACKAGE, eventBodies, type EventBodies } from '../support/webhook-events.js';

const BUDGET_FILE = new URL('../statement-budget.json', import.meta.url);
/** A job's batch at the ingest bench's 50 connections is about ten events; 25 is the most a job carries. */
const BATCHES = [1, 25] as const;
const MAX_ATTEMPTS = 10;

type Budget = Record<string, number>;

/**
 * Round trips to Postgres from any pool of this process, counted at the pg client. Installed before
 * the part opens its database: a connection keeps the query method it had when it connected
 * (src/db/query-deadline.ts wraps it then).
 */
let roundTrips = 0;
function countRoundTrips(): () => void {
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = prototype.query;
  prototype.query = function (this: unknown, ...args: unknown[]) {
    roundTrips++;
    return query.apply(this, args);
  };
  return () => (prototype.query = query);
}

/** Round trips made while `work` ran (nothing else of this process talks to Postgres meanwhile). */
async function counted(work: () => Promise<unknown>): Promise<number> {
  const before = roundTrips;
  await work();
  return roundTrips - before;
}

async function seedOrders(db: BenchDatabase, events: EventBodies, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++) {
    const order = await createOrder(db.db, { orderId: events.orderId(i), packageId: BENCH_PACKAGE.id, accountId: `acct_bench_${i}`, email: null });
    if (!order) throw new Error(`package ${BENCH_PACKAGE.id} is missing`);
    await attachCheckoutSession(db.db, order.order_id, events.sessionId(i), waker({ maxAttempts: MAX_ATTEMPTS }));
  }
}

export async function benchStatements(options: BenchOptions): Promise<Figure[]> {
  const budget = JSON.parse(readFileSync(BUDGET_FILE, 'utf8')) as Budget;
  const rounds = options.short ? 2 : 8;
  const uncount = countRoundTrips();
  const db = await createBenchDatabase(options.serverUrl, { maxConnections: 2, settings: options.dbSettings });
  try {
    const config = loadServiceConfig(serviceEnv(db.url, 'worker', options.env));
    const dispatch = createDispatch({ livemode: false, handlers: businessModules.map((module) => module.handlers(config, createOutbox(config))) });
    const events = eventBodies(rounds * BATCHES.reduce((a, b) => a + b, 0));
    const measured: Record<string, number> = {};
    let next = 0;
    for (const batch of BATCHES) {
      let claims = 0;
      let fulfilments = 0;
      for (let round = 0; round < rounds; round++) {
        const from = next;
        next += batch;
        await seedOrders(db, events, from, batch);
        const ids = Array.from({ length: batch }, (_, k) => from + k);
        claims += await counted(() =>
          claimEvents(
            db.db,
            ids.map((i) => events.incoming(i)),
            { maxAttempts: MAX_ATTEMPTS },
          ),
        );
        fulfilments += await counted(async () => {
          const results = await fulfilEvents(
            db.db,
            ids.map((i) => events.eventId(i)),
            { maxAttempts: MAX_ATTEMPTS, dispatch },
          );
          const unpaid = results.filter((result) => result.status !== 'processed');
          if (unpaid.length > 0) throw new Error(`the bench's checkouts did not all fulfil: ${JSON.stringify(unpaid)}`);
        });
      }
      measured[`claim, batch of ${batch}`] = claims / (rounds * batch);
      measured[`fulfil checkout, batch of ${batch}`] = fulfilments / (rounds * batch);
    }
    const figures = Object.entries(measured).map(([name, value]): Figure => {
      const limit = budget[name];
      if (limit === undefined) throw new Error(`bench/statement-budget.json has no budget for '${name}': add one`);
      return { part: 'statements', name: `statements per event: ${name}`, value, unit: '', target: { op: '≤', value: limit } };
    });
    const over = figures.filter((figure) => figure.value > figure.target!.value + 1e-9);
    if (over.length > 0) {
      const list = over.map((figure) => `${figure.name} ${figure.value.toFixed(2)} > ${figure.target!.value}`).join('; ');
      throw new Error(
        `the hot path sends more statements than bench/statement-budget.json allows: ${list}. Cut them, or raise the budget in the same commit and say why (docs/benchmarks.md)`,
      );
    }
    return figures;
  } finally {
    uncount();
    await db.close();
  }
}
