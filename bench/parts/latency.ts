// Part 3, latency (issue target 3). The service with ROLE=all at light load: signed paid
// checkout.session.completed events for fresh orders at RATE_PER_SECOND, one request at a time
// on a schedule (not a closed loop). For each, the time its 2xx arrived, and the time a dedicated
// connection first saw its order 'paid', polling every ~1 ms for the outstanding ones. The
// figure is paid-seen − 2xx-received; its resolution is the poll cycle, printed with it.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { waker } from '../../src/events/event-waits.js';
import { attachCheckoutSession, createOrder } from '../../src/modules/credits/orders.js';
import { createBenchDatabase } from '../support/database.js';
import type { BenchOptions } from '../support/options.js';
import { spawnBenchService, type BenchChild } from '../support/processes.js';
import type { Figure } from '../support/report.js';
import { BENCH_WEBHOOK_SECRET, serviceEnv } from '../support/service-env.js';
import { cpuSeconds, mean, percentile } from '../support/stats.js';
import { BENCH_PACKAGE, eventBodies, signatureHeader, type EventBodies } from '../support/webhook-events.js';

const RATE_PER_SECOND = 50;
// The warm-up's events are sent the same way and not counted: a just-started process is still
// compiling hot paths and connecting.
const FULL = { warmupSeconds: 2, seconds: 10 };
const SHORT = { warmupSeconds: 0.5, seconds: 2 };
// After the last send: how long stragglers may take before the run gives up on them.
const SETTLE_MS = 10_000;

interface Timings {
  acked: Array<number | undefined>;
  paid: Array<number | undefined>;
  /** Sent, answered 2xx or not yet answered, and not yet seen paid: what the watcher polls for. */
  outstanding: Map<string, number>;
  failures: number;
  pollCycles: number[];
}

async function send(child: BenchChild, events: EventBodies, timings: Timings): Promise<void> {
  const started = performance.now();
  const inFlight: Array<Promise<void>> = [];
  for (let i = 0; i < events.count; i++) {
    const wait = started + (i * 1000) / RATE_PER_SECOND - performance.now();
    if (wait > 0) await sleep(wait);
    const body = events.body(i);
    // Watched from the moment it is sent: an order may turn paid before its 2xx arrives.
    timings.outstanding.set(events.orderId(i), i);
    const failed = () => {
      timings.failures++;
      timings.outstanding.delete(events.orderId(i));
    };
    const request = fetch(`${child.url}/webhooks/stripe`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'stripe-signature': signatureHeader(body, BENCH_WEBHOOK_SECRET) },
    }).then(async (response) => {
      if (response.ok) timings.acked[i] = performance.now();
      else failed();
      await response.arrayBuffer();
    }, failed);
    inFlight.push(request);
  }
  await Promise.all(inFlight);
}

/** Polls for outstanding orders turning paid while sending, then until none is left or SETTLE_MS passed. */
async function watchPaid(client: pg.Client, timings: Timings, sending: Promise<void>): Promise<void> {
  let settleBy = Number.POSITIVE_INFINITY;
  const settle = () => void (settleBy = performance.now() + SETTLE_MS);
  sending.then(settle, settle);
  let previousStart: number | undefined;
  while (settleBy === Number.POSITIVE_INFINITY || (timings.outstanding.size > 0 && performance.now() < settleBy)) {
    const start = performance.now();
    if (previousStart !== undefined) timings.pollCycles.push(start - previousStart);
    previousStart = start;
    const { rows } = await client.query<{ order_id: string }>(`select order_id from orders where status = 'paid' and order_id = any($1)`, [
      [...timings.outstanding.keys()],
    ]);
    const seen = performance.now();
    for (const { order_id } of rows) {
      timings.paid[timings.outstanding.get(order_id)!] = seen;
      timings.outstanding.delete(order_id);
    }
    if (seen - start < 1) await sleep(1);
  }
}

export async function benchLatency(options: BenchOptions): Promise<Figure[]> {
  const size = options.short ? SHORT : FULL;
  const events = eventBodies(RATE_PER_SECOND * (size.warmupSeconds + size.seconds));
  const counted = RATE_PER_SECOND * size.warmupSeconds;
  const db = await createBenchDatabase(options.serverUrl, { maxConnections: 4, settings: options.dbSettings });
  const watcher = new pg.Client({ connectionString: db.url });
  try {
    for (let i = 0; i < events.count; i++) {
      await createOrder(db.db, { orderId: events.orderId(i), packageId: BENCH_PACKAGE.id, accountId: `acct_bench_${i}`, email: null });
      await attachCheckoutSession(db.db, events.orderId(i), events.sessionId(i), waker({ maxAttempts: 10 }));
    }
    options.log(`latency: ${RATE_PER_SECOND} events/s for ${size.warmupSeconds} s warm-up + ${size.seconds} s to the service (ROLE=all)`);
    const child = await spawnBenchService(serviceEnv(db.url, 'all', options.env), options.nodeFlags);
    const timings: Timings = { acked: [], paid: [], outstanding: new Map(), failures: 0, pollCycles: [] };
    let serviceCores = Number.NaN;
    try {
      await watcher.connect();
      const [cpuBefore, started] = [cpuSeconds(child.pid), performance.now()];
      const sending = send(child, events, timings);
      await Promise.all([sending, watchPaid(watcher, timings, sending)]);
      serviceCores = (cpuSeconds(child.pid) - cpuBefore) / ((performance.now() - started) / 1000);
    } finally {
      await child.stop();
    }
    const latencyOf = (i: number) => {
      const acked = timings.acked[i];
      const paid = timings.paid[i];
      return acked !== undefined && paid !== undefined ? [paid - acked] : [];
    };
    const latencies = Array.from({ length: events.count - counted }, (_, i) => latencyOf(counted + i)).flat();
    // Latency that grows from the first second to the last is a queue: the worker is slower than the load.
    const firstSecond = Array.from({ length: RATE_PER_SECOND }, (_, i) => latencyOf(counted + i)).flat();
    const lastSecond = Array.from({ length: RATE_PER_SECOND }, (_, i) => latencyOf(events.count - RATE_PER_SECOND + i)).flat();
    // Both stamps are now() of their transaction's start: claim start → fulfilment start.
    const { rows } = await db.pool.query<{ p50: number; p99: number }>(
      `select percentile_cont(0.5) within group (order by ms) as p50, percentile_cont(0.99) within group (order by ms) as p99
       from (select extract(epoch from o.paid_at - e.received_at) * 1000 as ms
             from stripe_events e join orders o on o.order_id = e.payload #>> '{data,object,metadata,order_id}'
             where e.event_id = any($1)) t`,
      [Array.from({ length: events.count - counted }, (_, i) => events.eventId(counted + i))],
    );
    const server = rows[0]!;
    const resolution = `poll cycle mean ${mean(timings.pollCycles).toFixed(2)} ms, p99 ${percentile(timings.pollCycles, 99).toFixed(2)} ms`;
    const unseen = events.count - counted - latencies.length;
    return [
      { part: 'latency', name: '2xx → paid p50', value: percentile(latencies, 50), unit: 'ms', target: { op: '≤', value: 10 }, note: resolution },
      {
        part: 'latency',
        name: '2xx → paid p99',
        value: percentile(latencies, 99),
        unit: 'ms',
        target: { op: '≤', value: 50 },
        note: `max ${Math.max(...latencies).toFixed(1)} ms; service CPU ${serviceCores.toFixed(2)} cores; p50 in the first second ${percentile(firstSecond, 50).toFixed(1)} ms, in the last ${percentile(lastSecond, 50).toFixed(1)} ms; ${latencies.filter((l) => l <= 0).length} paid before their 2xx`,
      },
      {
        part: 'latency',
        name: 'events not timed',
        value: unseen,
        unit: '',
        target: { op: '≤', value: 0 },
        note: `${events.count - counted} sent after ${counted} for warm-up, ${timings.failures} non-2xx/errors; in the database received_at → paid_at p50 ${server.p50.toFixed(1)} ms, p99 ${server.p99.toFixed(1)} ms`,
      },
    ];
  } finally {
    await watcher.end().catch(() => {});
    await db.drop();
  }
}
