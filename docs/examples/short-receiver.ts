// The short receiver of docs/notifications.md, no database: PORT=4000 APP_WEBHOOK_SECRET=whsec_… npx tsx docs/examples/short-receiver.ts
import { createServer } from 'node:http';
import { buffer } from 'node:stream/consumers';
import { Webhook } from 'standardwebhooks';

type Notification = { type: string; data: { account_id: string; sequence: number; order_id?: string; balance: { remaining: number } } };
const webhook = new Webhook(process.env.APP_WEBHOOK_SECRET ?? '');
const port = Number(process.env.PORT ?? 4000);
const applied = new Set<string>(); // webhook-ids done: a retry or a replay sends the same one again
const newest = new Map<string, number>(); // per account, the highest sequence applied: deliveries overtake each other

const handle = (headers: Record<string, string>, body: Buffer): number => {
  let notification: Notification;
  try {
    // The exact bytes, before any JSON parsing: the signature covers them. An old timestamp is refused too.
    notification = webhook.verify(body, headers) as Notification;
  } catch {
    return 400; // not from stripe-inbox: change nothing
  }
  if (applied.has(headers['webhook-id']!)) return 204;
  applied.add(headers['webhook-id']!);
  const { account_id, sequence, order_id, balance } = notification.data;
  if (notification.type === 'order.paid') console.log(`order ${order_id} paid: send its receipt`); // once per order
  if (sequence > (newest.get(account_id) ?? 0)) {
    newest.set(account_id, sequence);
    console.log(`${account_id}: ${balance.remaining} credits left (sequence ${sequence})`);
  }
  return 204; // 2xx for every type, one this app does not know too
};

createServer((req, res) => {
  buffer(req).then(
    (body) => res.writeHead(handle(req.headers as Record<string, string>, body)).end(),
    () => res.destroy(),
  );
}).listen(port, () => console.log(`receiving notifications at http://localhost:${port}/`));
