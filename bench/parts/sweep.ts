// Part 4, sweep (issue target 4). On a table of finished events, grown from the first size to
// the second: a sweep with nothing to do (median and p95 of emptyRuns), whether its candidate
// query uses the partial index stripe_events_processing_idx (auto_explain of the real statement),
// then `stale` abandoned 'processing' rows (old enqueued_at, no job) reclaimed by one sweep call.
// The ratios between the two sizes show whether both stay flat.
import { sweepStaleEvents, type SweepOptions } from '../../src/maintenance/sweep.js';
import { openExplainedDatabase } from '../../scripts/dev/explained-database.js';
import { createBenchDatabase, type BenchDatabase } from '../support/database.js';
import type { BenchOptions } from '../support/options.js';
import { ratio, type Figure } from '../support/report.js';
import { percentile } from '../support/stats.js';

const FULL = { sizes: [100_000, 1_000_000], stale: 10_000, emptyRuns: 20 };
const SHORT = { sizes: [10_000, 50_000], stale: 1_000, emptyRuns: 5 };
// Rows per INSERT: each statement stays well inside the pool's 15 s statement_timeout.
const INSERT_CHUNK = 100_000;
const SWEEP: SweepOptions = { staleAfterMs: 300_000, maxAttempts: 10 };
const INDEX = 'stripe_events_processing_idx';

const label = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1_000}k`);

/** Finished events with tiny payloads, numbered from `from`, so the table reaches `to` rows. */
async function growFinished(db: BenchDatabase, from: number, to: number): Promise<void> {
  for (let start = from; start < to; start += INSERT_CHUNK) {
    await db.pool.query(
      `insert into stripe_events (event_id, type, livemode, stripe_created_at, payload, status, received_at, enqueued_at, finished_at)
       select 'evt_done_' || g, 'checkout.session.completed', false, now() - interval '2 days', '{}', 'processed',
              now() - interval '2 days', now() - interval '2 days', now() - interval '2 days' + interval '1 second'
       from generate_series($1::int, $2::int) g`,
      [start + 1, Math.min(start + INSERT_CHUNK, to)],
    );
  }
  // Steady state, as a long-lived table would be: visibility map set, statistics current.
  await db.pool.query('vacuum analyze stripe_events');
}

async function timeEmptySweeps(db: BenchDatabase, runs: number): Promise<number[]> {
  await sweepStaleEvents(db.db, SWEEP);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const result = await sweepStaleEvents(db.db, SWEEP);
    times.push(performance.now() - started);
    if (result.reclaimed + result.failed !== 0) throw new Error(`an empty sweep reclaimed ${result.reclaimed} rows`);
  }
  return times;
}

interface Explained {
  usesIndex: boolean | undefined;
  /** The plan without the query text, or why there is none. */
  plan: string;
  /** Execution time of the reclaim statement alone, as auto_explain measured it. */
  statementMs: number;
}

async function explainEmptySweep(url: string): Promise<Explained> {
  const explained = openExplainedDatabase(url);
  try {
    await sweepStaleEvents(explained.db, SWEEP);
    const logged = explained.plans.find((p) => /with stale as materialized/i.test(p));
    if (!logged) return { usesIndex: undefined, plan: explained.problem() ?? 'no plan captured', statementMs: Number.NaN };
    const lines = logged.split('\n');
    const plan = lines.slice(lines.findIndex((l) => l.includes('(cost='))).join('\n');
    return { usesIndex: plan.includes(INDEX), plan, statementMs: Number(/duration: ([\d.]+) ms/.exec(logged)?.[1] ?? Number.NaN) };
  } finally {
    await explained.close();
  }
}

/** Abandoned rows: 'processing', enqueued an hour ago, no job (their worker died with it). */
async function timeReclaim(db: BenchDatabase, stale: number): Promise<number> {
  await db.pool.query(
    `insert into stripe_events (event_id, type, livemode, stripe_created_at, payload, enqueued_at)
     select 'evt_stale_' || gen_random_uuid(), 'checkout.session.completed', false, now(), '{}', now() - interval '1 hour'
     from generate_series(1, $1::int)`,
    [stale],
  );
  const started = performance.now();
  const result = await sweepStaleEvents(db.db, SWEEP);
  const ms = performance.now() - started;
  if (result.reclaimed !== stale) throw new Error(`the sweep reclaimed ${result.reclaimed} of ${stale} stale rows`);
  // Back to an all-finished table for the next size.
  await db.pool.query(`update stripe_events set status = 'processed', finished_at = now() where status = 'processing'`);
  await db.pool.query('select count(*) from graphile_worker.complete_jobs(array(select id from graphile_worker.jobs))');
  return ms;
}

export async function benchSweep(options: BenchOptions): Promise<Figure[]> {
  const size = options.short ? SHORT : FULL;
  const db = await createBenchDatabase(options.serverUrl, { maxConnections: 2, settings: options.dbSettings });
  const figures: Figure[] = [];
  const perSize: Array<{ emptyMs: number; reclaimMs: number }> = [];
  try {
    let rows = 0;
    for (const n of size.sizes) {
      options.log(`sweep: growing to ${label(n)} finished events`);
      await growFinished(db, rows, n);
      rows = n;
      const empty = await timeEmptySweeps(db, size.emptyRuns);
      const { usesIndex, plan, statementMs } = await explainEmptySweep(db.url);
      options.log(`sweep: plan of the empty sweep at ${label(n)}:\n${plan.split('\n').slice(0, 12).join('\n')}`);
      options.log(`sweep: reclaiming ${size.stale} stale rows at ${label(n)}`);
      const reclaimMs = await timeReclaim(db, size.stale);
      const at = `at ${label(n)}`;
      perSize.push({ emptyMs: percentile(empty, 50), reclaimMs });
      figures.push(
        {
          part: 'sweep',
          name: `empty sweep ${at} p50`,
          value: percentile(empty, 50),
          unit: 'ms',
          target: { op: '<', value: 5 },
          note: `${size.emptyRuns} runs`,
        },
        { part: 'sweep', name: `empty sweep ${at} p95`, value: percentile(empty, 95), unit: 'ms' },
        {
          part: 'sweep',
          name: `plan uses ${INDEX} ${at}`,
          value: usesIndex ? 1 : 0,
          unit: '',
          display: usesIndex === undefined ? 'unknown' : usesIndex ? 'yes' : 'NO',
          note: `reclaim statement ${statementMs.toFixed(2)} ms (auto_explain, analyze on)`,
        },
        { part: 'sweep', name: `reclaim ${label(size.stale)} stale ${at}`, value: reclaimMs / 1000, unit: 's', target: { op: '<', value: 2 } },
      );
    }
    const [small, large] = perSize;
    const scale = `${label(size.sizes[1]!)}/${label(size.sizes[0]!)}`;
    figures.push(
      { part: 'sweep', name: `empty sweep ${scale}`, value: ratio(large!.emptyMs, small!.emptyMs), unit: '×', note: 'flat ≈ 1' },
      { part: 'sweep', name: `reclaim ${scale}`, value: ratio(large!.reclaimMs, small!.reclaimMs), unit: '×', note: 'flat ≈ 1' },
    );
    return figures;
  } finally {
    await db.drop();
  }
}
