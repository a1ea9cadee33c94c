// A minimal app that receives stripe-inbox's outcome notifications (docs/notifications.md), to copy;
// test/notifications/receiver-example.test.ts runs it against the real service. Verify with the
// `standardwebhooks` package, then record the webhook-id and apply the effect in ONE transaction:
// a retry, a replay or a second delivery in flight finds the id taken and changes nothing, and a
// crash in between leaves neither, so the next attempt does both. On its own:
//   PORT=4000 DATABASE_URL=postgres://… APP_WEBHOOK_SECRET=whsec_… npx tsx docs/examples/notification-receiver.ts
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';

// The documented shape. The signature proves stripe-inbox sent it, so it is not checked again here.
interface Notification {
  type: string;
  timestamp: string;
  data: { account_id: string; sequence: number; balance: { granted: number; used: number; remaining: number }; [field: string]: unknown };
}

// A real app creates these in its own migrations.
const TABLES = `
  create table if not exists processed_notifications (
    webhook_id text primary key,             -- the dedupe: one row per notification, ever
    type text not null, received_at timestamptz not null default now()
  );
  create table if not exists app_accounts (
    account_id text primary key,
    granted int not null, used int not null, remaining int not null,
    sequence   int not null                   -- the newest notification applied
  );
  create table if not exists receipt_emails (
    order_id   text primary key,              -- one receipt per order, whatever arrives
    account_id text not null, amount int not null, currency text not null,
    sent_at    timestamptz                    -- set by the mailer job that sends it, later
  );`;

export interface Receiver {
  readonly url: string;
  close(): Promise<void>;
}

/** Listens on `port` (0: any free one); `secrets` are APP_WEBHOOK_SECRET's, several during a rotation. */
export async function startReceiver(options: { port: number; databaseUrl: string; secrets: readonly string[] }): Promise<Receiver> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl });
  // Without a listener, an idle connection that drops (a database restart) would end the process.
  pool.on('error', (error) => console.error('idle database connection lost', error));
  await pool.query(TABLES);
  const keys = options.secrets.map((secret) => new Webhook(secret));

  const server = createServer((req, res) => {
    const answer = (status: number) => void res.writeHead(status).end();
    if (req.method !== 'POST') return answer(405);
    const chunks: Buffer[] = [];
    let size = 0;
    // A notification is a few hundred bytes; anything near a megabyte is not one.
    req.on('data', (chunk: Buffer) => ((size += chunk.length) > 1_048_576 ? req.destroy() : chunks.push(chunk)));
    req.on('end', () => {
      // The raw bytes: the signature covers them exactly, so verify before any JSON parsing.
      const body = Buffer.concat(chunks);
      const header = (name: string) => String(req.headers[name] ?? '');
      const headers = {
        'webhook-id': header('webhook-id'),
        'webhook-timestamp': header('webhook-timestamp'),
        'webhook-signature': header('webhook-signature'),
      };
      const notification = verified(keys, body, headers);
      if (!notification) return answer(400);
      // Short and in the database only: answer within APP_WEBHOOK_TIMEOUT_SECONDS, slow work later.
      // On an error nothing was committed, and a 5xx makes stripe-inbox try again after a backoff.
      record(pool, headers['webhook-id'], notification).then(
        () => answer(204),
        (error: unknown) => (console.error('notification not recorded', error), answer(500)),
      );
    });
  });
  server.listen(options.port);
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    async close() {
      server.close();
      await once(server, 'close');
      await pool.end();
    },
  };
}

// verify() checks the signature over the exact bytes and refuses a webhook-timestamp over 5 minutes
// off (a captured request cannot be played again later). One matching secret suffices (rotation).
function verified(keys: readonly Webhook[], body: Buffer, headers: Record<string, string>): Notification | undefined {
  for (const key of keys) {
    try {
      return key.verify(body, headers) as Notification;
    } catch {
      // Not signed with this secret (or not at all): try the next.
    }
  }
  return undefined;
}

async function record(pool: pg.Pool, webhookId: string, { type, data }: Notification): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    // Two deliveries of one id at once: the second waits on the primary key, then finds it taken.
    const fresh = await client.query('insert into processed_notifications (webhook_id, type) values ($1, $2) on conflict do nothing', [webhookId, type]);
    if (fresh.rowCount === 1) {
      // Every type carries the balance right after its outcome, numbered per account by `sequence`:
      // keep the highest, so one that arrives late (after a retry) never rolls the balance back.
      const { account_id, balance, sequence } = data;
      await client.query(
        `insert into app_accounts (account_id, granted, used, remaining, sequence) values ($1, $2, $3, $4, $5)
         on conflict (account_id) do update set granted = excluded.granted, used = excluded.used, remaining = excluded.remaining, sequence = excluded.sequence
         where app_accounts.sequence < excluded.sequence`,
        [account_id, balance.granted, balance.used, balance.remaining, sequence],
      );
      // "Send the receipt once": queue it here, in the same transaction; a mailer job sends it.
      if (type === 'order.paid') {
        await client.query('insert into receipt_emails (order_id, account_id, amount, currency) values ($1, $2, $3, $4) on conflict do nothing', [
          data.order_id,
          account_id,
          data.amount,
          data.currency,
        ]);
      }
      // Any other type (one added later too) is recorded and answered 2xx: a 4xx would be retried for days.
    }
    await client.query('commit');
  } catch (error) {
    await client.query('rollback');
    throw error;
  } finally {
    client.release();
  }
}

// Run on its own (the command at the top).
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { PORT = '4000', DATABASE_URL, APP_WEBHOOK_SECRET } = process.env;
  if (!DATABASE_URL || !APP_WEBHOOK_SECRET) throw new Error('set DATABASE_URL and APP_WEBHOOK_SECRET (whsec_…, comma-separated during a rotation)');
  const receiver = await startReceiver({ port: Number(PORT), databaseUrl: DATABASE_URL, secrets: APP_WEBHOOK_SECRET.split(',') });
  console.log(`receiving notifications at ${receiver.url} (APP_WEBHOOK_URL of stripe-inbox)`);
}
