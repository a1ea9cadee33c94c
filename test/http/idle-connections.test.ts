// Idle connections cannot fill the connection cap and keep Stripe out: a connection that has not
// carried a request that proved itself (a webhook with a valid signature, a request with the API
// or admin token) is closed a few seconds after its answer, while a proven one keeps the long
// keep-alive that suits Stripe and the proxy in front. The cap is lowered on the running server
// (its own maxConnections, what Node checks on each new connection) so that a few sockets fill it.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { exampleObject, sampleEvent, signDelivery } from '../../src/stripe/sample-events.js';
import { ADMIN_TOKEN, API_TOKEN, serviceForFile, WEBHOOK_SECRET } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const file = serviceForFile({ env: { ROLE: 'web' } });

interface Connection {
  /** Sends one request and resolves with its status line, or undefined if the server closed instead. */
  request(text: string): Promise<string | undefined>;
  readonly closed: Promise<void>;
  isClosed(): boolean;
  destroy(): void;
}

async function connect(): Promise<Connection | undefined> {
  const url = new URL(file.service.url);
  const socket = net.connect(Number(url.port), '127.0.0.1');
  socket.on('error', () => {});
  let closed = false;
  const whenClosed = new Promise<void>((resolve) => socket.once('close', () => ((closed = true), resolve())));
  const connected = await Promise.race([new Promise<boolean>((resolve) => socket.once('connect', () => resolve(true))), whenClosed.then(() => false)]);
  if (!connected) return undefined;
  return {
    request(text) {
      // The answers here are small: whole once the headers and the Content-Length bytes (or the
      // last chunk) are in.
      return new Promise((resolve) => {
        let received = '';
        const onData = (chunk: Buffer) => {
          received += chunk.toString('latin1');
          const end = received.indexOf('\r\n\r\n');
          if (end === -1) return;
          const length = /\r\ncontent-length: *(\d+)/i.exec(received.slice(0, end));
          if (length ? received.length < end + 4 + Number(length[1]) : !received.endsWith('\r\n0\r\n\r\n')) return;
          socket.off('data', onData);
          resolve(received.slice(0, received.indexOf('\r\n')));
        };
        socket.on('data', onData);
        void whenClosed.then(() => resolve(undefined));
        socket.write(text);
      });
    },
    closed: whenClosed,
    isClosed: () => closed,
    destroy: () => socket.destroy(),
  };
}

const get = (path: string, token?: string) => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${token ? `Authorization: Bearer ${token}\r\n` : ''}\r\n`;
const delivery = (secret = WEBHOOK_SECRET) => {
  const { body, headers } = signDelivery(sampleEvent('charge.succeeded', exampleObject('charge')), secret);
  const lines = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return `POST /webhooks/stripe HTTP/1.1\r\nHost: localhost\r\n${lines}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
};

/** A signed delivery on a connection of its own: its status line, or undefined when refused. */
async function deliverOnce(): Promise<string | undefined> {
  const connection = await connect();
  try {
    return await connection?.request(delivery());
  } finally {
    connection?.destroy();
  }
}

test('connections that only probed fill the cap for a few seconds, not the keep-alive: then a signed delivery gets in', async () => {
  const cap = 8;
  const { server } = file.service;
  const defaultCap = server.maxConnections;
  server.maxConnections = cap;
  const idlers: Connection[] = [];
  try {
    // Each sends one unauthenticated health check and idles, until the server refuses the next.
    for (;;) {
      const connection = await connect();
      const answer = await connection?.request(get('/healthz'));
      if (!answer) break;
      assert.equal(answer, 'HTTP/1.1 200 OK');
      idlers.push(connection!);
      assert.ok(idlers.length <= cap, 'the server took more connections than its cap');
    }
    assert.equal(idlers.length, cap);
    assert.equal(await deliverOnce(), undefined, 'while the idlers hold the cap, Stripe is refused');

    await waitFor('a signed delivery to get in', async () => (await deliverOnce()) === 'HTTP/1.1 200 OK', { timeoutMs: 20_000, intervalMs: 250 });
    assert.ok(
      idlers.every((c) => c.isClosed()),
      'the server closed the idlers',
    );
  } finally {
    server.maxConnections = defaultCap;
    for (const idler of idlers) idler.destroy();
  }
});

test('a connection that carried a verified delivery or an authenticated request keeps its keep-alive', async () => {
  const proven = { delivery: delivery(), admin: get('/admin/api/status', ADMIN_TOKEN), api: get('/api/packages', API_TOKEN) };
  const unproven = {
    probe: get('/healthz'),
    'forged delivery': delivery('whsec_forged_0123456789'),
    'api without token': get('/api/packages'),
    'unknown path': get('/nope'),
  };
  const open = (requests: Record<string, string>) =>
    Promise.all(
      Object.entries(requests).map(async ([name, text]) => {
        const connection = (await connect())!;
        assert.match((await connection.request(text)) ?? 'closed', /^HTTP\/1\.1 [24]\d\d /, name);
        return { name, connection };
      }),
    );
  const [kept, cut] = [await open(proven), await open(unproven)];
  try {
    await waitFor('the server to close the unproven connections', () => Promise.resolve(cut.every((c) => c.connection.isClosed())), {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    assert.deepEqual(
      kept.filter((c) => c.connection.isClosed()).map((c) => c.name),
      [],
      'proven connections still open',
    );
    // And still usable: the long keep-alive is what a proxy's connection reuse relies on.
    for (const { name, connection } of kept) assert.equal(await connection.request(get('/healthz')), 'HTTP/1.1 200 OK', name);
  } finally {
    for (const { connection } of [...kept, ...cut]) connection.destroy();
  }
});
