// The short receiver at the top of docs/notifications.md: the page's block is
// docs/examples/short-receiver.ts verbatim, and that file, run as its own process as a reader would
// run it, takes the real service's notifications: a paid order is applied once, with its balance,
// a replay (same webhook-id, same body) changes nothing, and a request that does not verify is
// refused with 400.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { givenOrder, paidEvent } from '../support/factories.js';
import { freePort } from '../support/free-port.js';
import { APP_WEBHOOK_SECRET } from '../support/notification-receiver.js';
import { startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const EXAMPLE = 'docs/examples/short-receiver.ts';

test('docs/notifications.md shows docs/examples/short-receiver.ts verbatim, before any other section', () => {
  const page = readFileSync('docs/notifications.md', 'utf8');
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(page);
  assert.equal(block?.[1], readFileSync(EXAMPLE, 'utf8'));
  assert.ok(block.index < page.indexOf('\n## Settings'), 'at the top of the page');
});

describe('the short receiver', () => {
  let database: TestDatabase;
  let receiver: ChildProcess;
  let url: string;
  let service: TestService;
  const printed: string[] = [];
  before(async () => {
    database = await createTestDatabase();
    const port = await freePort();
    receiver = spawn(process.execPath, ['--import', 'tsx', EXAMPLE], {
      env: { ...process.env, PORT: String(port), APP_WEBHOOK_SECRET },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    createInterface({ input: receiver.stdout! }).on('line', (line) => printed.push(line));
    url = `http://127.0.0.1:${port}/`;
    await waitFor('the example listening', () => Promise.resolve(printed.includes(`receiving notifications at http://localhost:${port}/`)));
    service = await startTestService(database, { env: { APP_WEBHOOK_URL: url, APP_WEBHOOK_SECRET } });
  });
  after(async () => {
    await service?.close();
    receiver?.kill();
    await database?.close();
  });

  interface Listed {
    notification_id: string;
    deliveries: Array<{ status: string; attempt_log: Array<{ status_code: number | null }> }>;
  }
  const deliveryOf = async (id: string) => {
    const listed = (await service.call('GET', '/admin/api/notifications')).body as unknown as Listed[];
    return listed.find((n) => n.notification_id === id)?.deliveries[0];
  };

  test('applies a paid order once with its balance, and a replay of it changes nothing', async () => {
    const order = await givenOrder(database);
    assert.equal((await service.deliver(paidEvent(order))).status, 200);
    const told = [`order ${order.order_id} paid: send its receipt`, `${order.account_id}: ${order.credits} credits left (sequence 1)`];
    await waitFor('the example applied order.paid', () => Promise.resolve(told.every((line) => printed.includes(line))));
    const [notification] = (await service.call('GET', '/admin/api/notifications')).body as unknown as Listed[];
    const id = notification!.notification_id;
    await waitFor('the first delivery recorded', async () => (await deliveryOf(id))?.status === 'delivered');

    const replay = await service.call('POST', '/admin/api/notifications/replay', { body: { ids: [id] } });
    assert.deepEqual([replay.status, replay.body], [202, { replayed: [id], skipped: [] }]);
    const delivery = await waitFor('the replay delivered', async () => {
      const d = await deliveryOf(id);
      return d?.status === 'delivered' && d.attempt_log.length === 2 && d;
    });
    assert.deepEqual(
      delivery.attempt_log.map((a) => a.status_code),
      [204, 204],
    );
    assert.deepEqual(printed.slice(1), told, 'the replay was recognised by its webhook-id');
  });

  test('refuses a request that does not verify with 400, and applies nothing', async () => {
    const before = printed.length;
    const body = JSON.stringify({
      type: 'order.paid',
      timestamp: new Date().toISOString(),
      data: { account_id: 'acct_forged', order_id: 'ord_forged', sequence: 99, balance: { granted: 1_000_000, used: 0, remaining: 1_000_000 } },
    });
    const signed = (secret: string, id: string) => {
      const now = new Date();
      return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(id, now, body) };
    };
    const post = (text: string, headers: Record<string, string>) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text }).then((r) => r.status);
    assert.equal(
      await post(body, signed(`whsec_${Buffer.alloc(32, 'not-the-app-secret').toString('base64')}`, 'msg_forged')),
      400,
      'signed with another secret',
    );
    assert.equal(await post(body.replace('1000000', '2000000'), signed(APP_WEBHOOK_SECRET, 'msg_tampered')), 400, 'a body changed after signing');
    assert.equal(await post(body, {}), 400, 'no signature at all');
    assert.equal(printed.length, before);
  });
});
