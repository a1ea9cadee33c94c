// A real PgBouncer in front of the test server, in session or transaction mode, for the tests of
// the service behind a connection pooler (src/db/connection-pooler.ts). It runs on a free loopback
// port from a temporary folder (its ini, auth file, socket and log), and is killed, and the
// folder removed, by stop().
//
// Clients authenticate to PgBouncer by trust; PgBouncer logs in to the server as the client's user
// with the password of the auth file, taken from the upstream URL (the embedded server has one).
// No ignore_startup_parameters: pg sends only user, database and application_name, which PgBouncer
// tracks, and the service must keep it that way (src/db/database.ts sets the rest in the session).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { access, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.js';
import { serverUser } from './postgres-user.js';
import { waitFor } from './wait-for.js';

const PGBOUNCER = process.env.PGBOUNCER ?? '/usr/sbin/pgbouncer';
const START_TIMEOUT_MS = 10_000;

export type PoolMode = 'session' | 'transaction';

export interface PgBouncer {
  readonly mode: PoolMode;
  /** `databaseUrl` (any database of the upstream server) as reached through this PgBouncer. */
  url(databaseUrl: string): string;
  stop(): Promise<void>;
}

/** Starts PgBouncer in `mode` in front of the server of `upstreamUrl`, and waits until it accepts connections. */
export async function startPgBouncer(upstreamUrl: string, mode: PoolMode): Promise<PgBouncer> {
  await access(PGBOUNCER).catch(() => {
    throw new Error(`PgBouncer is not installed at ${PGBOUNCER} (set PGBOUNCER to its path): apt-get install pgbouncer`);
  });
  const upstream = new URL(upstreamUrl);
  const user = decodeURIComponent(upstream.username || 'postgres');
  const dir = await mkdtemp(path.join(tmpdir(), 'stripe-inbox-pgbouncer-'));
  const port = await freePort();
  const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;
  await writeFile(path.join(dir, 'users.txt'), `${quote(user)} ${quote(decodeURIComponent(upstream.password))}\n`, { mode: 0o600 });
  await writeFile(
    path.join(dir, 'pgbouncer.ini'),
    `[databases]
* = host=${upstream.hostname.replace(/^\[|\]$/g, '')} port=${upstream.port || 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir = ${dir}
pidfile = ${path.join(dir, 'pgbouncer.pid')}
auth_type = trust
auth_file = ${path.join(dir, 'users.txt')}
pool_mode = ${mode}
max_client_conn = 500
default_pool_size = 40
`,
  );
  const runAs = serverUser();
  if (runAs) for (const file of ['', 'users.txt', 'pgbouncer.ini']) await chown(path.join(dir, file), runAs.uid, runAs.gid);
  // Started as root, PgBouncer drops to the user its -u names (it refuses to run as root).
  const child = spawn(PGBOUNCER, [...(runAs ? ['-u', 'postgres'] : []), path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-8_192)));
  const exited = once(child, 'exit');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const url = (databaseUrl: string) => {
    const through = new URL(databaseUrl);
    through.hostname = '127.0.0.1';
    through.port = String(port);
    return through.toString();
  };
  try {
    const exitedEarly = exited.then(([code]) => {
      throw new Error(`PgBouncer exited with ${String(code)} before accepting connections:\n${log}`);
    });
    exitedEarly.catch(() => {}); // read by the race below only; an exit at stop() is expected
    await Promise.race([
      waitFor(`PgBouncer on port ${port} to accept connections`, () => accepts(url(upstreamUrl)), { timeoutMs: START_TIMEOUT_MS, intervalMs: 50 }),
      exitedEarly,
    ]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { mode, url, stop };
}

/** Whether a query through PgBouncer comes back. */
async function accepts(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } finally {
    await client.end().catch(() => {});
  }
}
