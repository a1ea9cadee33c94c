// A real HTTP receiver of the service's outcome notifications, for the tests: every request is
// verified with the `standardwebhooks` package (the specification's reference implementation, not
// our code), and kept with its headers and raw body. What it answers is the test's to set: 204 by
// default, or any status, a hang, a large body, per request. Each verified body is held to its
// type's schema in docs/openapi.json (support/openapi.ts): one it refuses fails the test that
// reads what was received, and the file when the receiver closes.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { NewNotification } from '../../src/notifications/outbox.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { notificationProblem } from './openapi.js';
import { startTestService, type TestService } from './service.js';

/** A test signing secret: whsec_ and the base64 of 32 bytes. */
export const APP_WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 'notification-secret').toString('base64')}`;

export interface ReceivedNotification {
  /** webhook-id */
  id: string;
  /** webhook-timestamp, Unix seconds. */
  timestamp: number;
  signature: string;
  /** The raw body, as it arrived. */
  body: string;
  type: string;
  data: Record<string, unknown>;
  /** Whether standardwebhooks verified it with the receiver's secret. */
  verified: boolean;
  /** What the receiver answered. */
  answered: number | 'hung';
  /** The W3C traceparent header, when the attempt was traced; '' without one. */
  traceparent: string;
}

/** What to answer one request: a status (and body, and headers such as Retry-After), or never. */
export type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

export interface NotificationReceiver {
  readonly url: string;
  /** Every request, in arrival order. */
  readonly received: ReceivedNotification[];
  /** Decides each answer from the request and how many came before it; 204 when unset. */
  answer: (request: ReceivedNotification, index: number) => Answer;
  /** The verified notifications, one per webhook-id (the first of each), as a deduplicating app keeps them. */
  unique(): ReceivedNotification[];
  /** Ends every hanging request: its connection is destroyed, as by an app that crashed. */
  dropHanging(): void;
  /** Ends every hanging request and stops. */
  close(): Promise<void>;
}

export async function startNotificationReceiver(options: { secret?: string; path?: string } = {}): Promise<NotificationReceiver> {
  const verifier = new Webhook(options.secret ?? APP_WEBHOOK_SECRET);
  const path = options.path ?? '/notifications';
  const hanging = new Set<ServerResponse>();
  const received: ReceivedNotification[] = [];
  const refused: string[] = [];
  const described = () => {
    if (refused.length > 0) throw new Error(refused.join('\n'));
  };
  const receiver: NotificationReceiver = {
    url: '',
    get received() {
      described();
      return received;
    },
    answer: () => ({ status: 204 }),
    unique() {
      described();
      const seen = new Map<string, ReceivedNotification>();
      for (const r of received) if (r.verified && !seen.has(r.id)) seen.set(r.id, r);
      return [...seen.values()];
    },
    dropHanging() {
      for (const res of hanging) res.destroy();
    },
    async close() {
      receiver.dropHanging();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
      described();
    },
  };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const header = (name: string) => String(req.headers[name] ?? '');
    const headers = { 'webhook-id': header('webhook-id'), 'webhook-timestamp': header('webhook-timestamp'), 'webhook-signature': header('webhook-signature') };
    let verified: boolean;
    try {
      verifier.verify(body, headers);
      verified = req.url === path && req.method === 'POST' && header('content-type') === 'application/json';
    } catch {
      verified = false;
    }
    const parsed = verified ? (JSON.parse(body) as { type: string; data: Record<string, unknown> }) : { type: '', data: {} };
    const problem = verified ? notificationProblem(parsed) : undefined;
    if (problem) refused.push(problem);
    const request: ReceivedNotification = {
      id: headers['webhook-id'],
      timestamp: Number(headers['webhook-timestamp']),
      signature: headers['webhook-signature'],
      body,
      type: parsed.type,
      data: parsed.data,
      verified,
      answered: 'hung',
      traceparent: header('traceparent'),
    };
    const answer = verified ? receiver.answer(request, received.length) : { status: 400, body: 'verification failed' };
    received.push(request);
    if (answer === 'hang') {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    request.answered = answer.status;
    res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers }).end(answer.body ?? '');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return Object.assign(receiver, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}` });
}

/**
 * An order.paid as the credits module writes it, for a test that writes notifications itself to
 * test their delivery: the receiver holds every body to docs/openapi.json.
 */
export function orderPaidNotification(key: string, accountId: string): NewNotification {
  const orderId = `ord_${key.replace(/\W/g, '_')}`;
  return {
    type: 'order.paid',
    key,
    accountId,
    sequence: 1,
    eventId: null,
    data: {
      account_id: accountId,
      order_id: orderId,
      package_id: 'starter',
      credits: 40,
      amount: 4900,
      currency: 'chf',
      stripe_event_id: `evt_${orderId}`,
      checkout_session_id: `cs_test_${orderId}`,
      balance: { granted: 40, used: 0, remaining: 40 },
      sequence: 1,
    },
  };
}

/** The service's environment for notifications to `receiver`. */
export function notifyingTo(receiver: { url: string }, env: Record<string, string> = {}): Record<string, string> {
  return { APP_WEBHOOK_URL: receiver.url, APP_WEBHOOK_SECRET, ...env };
}

export interface NotifyingFile {
  readonly database: TestDatabase;
  readonly receiver: NotificationReceiver;
  readonly service: TestService;
}

/** A fresh database, a receiver, and the service notifying it, for one test file (or describe block). */
export function notifyingServiceForFile(env: Record<string, string> = {}): NotifyingFile {
  const file = {} as { database: TestDatabase; receiver: NotificationReceiver; service: TestService };
  before(async () => {
    file.database = await createTestDatabase();
    file.receiver = await startNotificationReceiver();
    file.service = await startTestService(file.database, { env: notifyingTo(file.receiver, env) });
  });
  after(async () => {
    await file.service?.close();
    await file.receiver?.close();
    await file.database?.close();
  });
  return file;
}

/** The verified notifications (one per webhook-id) that `match` picks, once there are `count`. */
export function receivedWhere(
  receiver: NotificationReceiver,
  match: (n: ReceivedNotification) => boolean,
  count = 1,
): () => Promise<ReceivedNotification[] | undefined> {
  return () => {
    const found = receiver.unique().filter(match);
    return Promise.resolve(found.length >= count ? found : undefined);
  };
}
