// Every ops script as an operator runs it: --help, a clear error and exit 2 for bad arguments,
// --json for machines, a non-zero exit when the result is a failure.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { promisify } from 'node:util';
import { claimEvents } from '../../src/events/event-store.js';
import { databaseForFile } from '../support/database.js';
import { ADMIN_TOKEN, API_TOKEN, WEBHOOK_SECRET } from '../support/service.js';
import { incomingEvent } from '../support/factories.js';
import { exampleObject, sampleEvent } from '../../src/stripe/sample-events.js';

const run = promisify(execFile);
const database = databaseForFile();

/** Runs scripts/<name>.ts as `npm run <name>` would (npm sets npm_lifecycle_event), unless `viaNpm` is false. */
async function script(name: string, args: string[], { viaNpm = true } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'test', DATABASE_URL: database.url, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, API_TOKEN, ADMIN_TOKEN, LOG_LEVEL: 'silent' };
  if (viaNpm) env.npm_lifecycle_event = name;
  else delete env.npm_lifecycle_event;
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', `scripts/${name}.ts`, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('every script', () => {
  for (const name of ['status', 'sweep', 'replay', 'reconcile', 'prune', 'migrate', 'send-event']) {
    test(`${name}: --help, and exit 2 naming a bad option`, async () => {
      const help = await script(name, ['--help']);
      assert.equal(help.code, 0);
      assert.match(help.stdout, new RegExp(`usage: npm run ${name}`));
      const bad = await script(name, ['--no-such-option']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /error: .*--no-such-option/);
    });
  }
});

test('started without npm (as in the image), a script shows how it was started, not npm run', async () => {
  const help = await script('status', ['--help'], { viaNpm: false });
  assert.match(help.stdout, /^usage: node --import tsx scripts\/status\.ts \[--since/);
  assert.doesNotMatch(help.stdout, /npm run/);
});

test('status --json has the admin API shape and exits 0 when nothing failed', async () => {
  const { code, stdout } = await script('status', ['--json']);
  assert.equal(code, 0);
  const status = JSON.parse(stdout) as Record<string, unknown>;
  assert.deepEqual(Object.keys(status).sort(), ['by_type', 'counts', 'events_queued', 'failed', 'history_counted_at', 'jobs_queued', 'last_sweep_at', 'oldest_processing_age_seconds']);
});

test('status counts events by type and status within --since', async () => {
  const events = ['charge.succeeded', 'charge.succeeded', 'invoice.upcoming'].map((type) => incomingEvent(sampleEvent(type, exampleObject('charge'))));
  await claimEvents(database.db, events, { maxAttempts: 10 });
  const { stdout } = await script('status', ['--json', '--since', '1h']);
  const byType = (JSON.parse(stdout) as { by_type: Array<{ type: string; counts: Record<string, number> }> }).by_type;
  assert.deepEqual(byType.map((t) => [t.type, t.counts.processing]), [['charge.succeeded', 2], ['invoice.upcoming', 1]]);
});

test('bad values are refused with the flag named and an example', async () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['prune', ['--older-than-days', '7'], /--older-than-days must be a whole number from 31 to 36500, e\.g\. --older-than-days 90: Stripe resends/],
    // Past a century the cutoff would leave Postgres' range of dates: refused here, not by Postgres.
    ['prune', ['--older-than-days', '99999999'], /--older-than-days must be a whole number from 31 to 36500/],
    ['status', ['--since', 'yesterday'], /--since must be a duration like 30m, 24h or 7d, e\.g\. --since 7d/],
    ['status', ['--since', '999999w'], /--since can be at most 36500d/],
    ['replay', ['--status', 'failed', '--since', '999999w'], /--since can be at most 36500d/],
    ['reconcile', ['--since', '40d'], /--since can be at most 30d/],
    ['reconcile', [], /--since is required/],
    ['sweep', ['--stale-after', 'soon'], /--stale-after must be a whole number/],
    // Number() would take these; a whole-number option does not.
    ['status', ['--failed', '1e3'], /--failed must be a whole number of at least 0, e\.g\. --failed 20/],
    ['send-event', ['charge.succeeded', '--times', ''], /--times must be a whole number from 1 to 1000/],
    ['replay', ['--status', 'lost'], /--status must be one of/],
    ['replay', [], /give event ids or --status/],
  ];
  for (const [name, args, message] of cases) {
    const result = await script(name, args);
    assert.equal(result.code, 2, `${name} ${args.join(' ')}`);
    assert.match(result.stderr, message);
  }
});

test('replay of an unknown event exits 1 and says which', async () => {
  const result = await script('replay', ['evt_unknown', '--json']);
  assert.equal(result.code, 1);
  assert.deepEqual(JSON.parse(result.stdout), { replayed: [], not_found: ['evt_unknown'], limit_reached: false });
});

test('replay --status stops at --limit, says so, and the next run takes the rest', async () => {
  const events = Array.from({ length: 3 }, () => incomingEvent(sampleEvent('charge.succeeded', exampleObject('charge'))));
  await claimEvents(database.db, events, { maxAttempts: 10 });
  const ids = events.map((e) => e.eventId);
  await sql`update stripe_events set status = 'failed', last_error = 'amount mismatch', finished_at = now() where event_id = any(${ids})`.execute(database.db);

  const first = await script('replay', ['--status', 'failed', '--limit', '2']);
  assert.equal(first.code, 0);
  assert.match(first.stdout, /replayed 2 event\(s\)/);
  assert.match(first.stdout, /stopped at --limit 2: more may match; run it again for the next ones/);
  const second = JSON.parse((await script('replay', ['--status', 'failed', '--limit', '2', '--json'])).stdout) as { replayed: string[]; limit_reached: boolean };
  assert.deepEqual({ replayed: second.replayed.length, limit_reached: second.limit_reached }, { replayed: 1, limit_reached: false });
  const left = await database.db.selectFrom('stripe_events').select('status').distinct().where('event_id', 'in', ids).execute();
  assert.deepEqual(left, [{ status: 'processing' }]);
});
