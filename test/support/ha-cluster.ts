// A self-run highly available Postgres on loopback, the shape docs/deploy.md describes: a one-member
// etcd, two PostgreSQL nodes managed by Patroni (streaming replication, one leader), and HAProxy
// sending connections to whichever node Patroni's REST API calls the primary. The service
// connects through HAProxy with an ordinary DATABASE_URL and knows nothing else of the cluster.
//
// Each node's replication stream runs through a partitionable relay (its Patroni
// connect_address), so a test can hold back the WAL a standby receives — the window in which an
// asynchronous standby lacks commits its leader acknowledged — without touching the leader's
// client connections. Everything lives in one temp directory, owned by the `postgres` user
// because Postgres refuses to run as root, and is killed and removed by stop().
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.js';
import { serverUser } from './postgres-user.js';
import { partitionableLink, type PartitionableLink } from './partitionable-link.js';
import { waitFor } from './wait-for.js';

const SUPERUSER_PASSWORD = 'ha-test';
const SCOPE = 'stripe-inbox-ha';

/** What Patroni's DCS settings the tests vary. */
export interface HaClusterOptions {
  /** Patroni's synchronous_mode: a commit returns once the standby has it. */
  synchronous: boolean;
}

export interface HaNode {
  readonly name: string;
  readonly pgPort: number;
  readonly restPort: number;
  /** The relay other nodes replicate from this one through (its Patroni connect_address). */
  readonly replicationLink: PartitionableLink;
}

export interface HaCluster {
  readonly nodes: readonly HaNode[];
  /** A URL through HAProxy, as the service would be configured. */
  url(database: string): string;
  /** A URL straight to one node, bypassing HAProxy (for checks on a node that is not the leader). */
  nodeUrl(node: HaNode, database: string): string;
  /** The node whose Patroni reports itself primary, once one does and the other streams from it. */
  waitForLeader(options?: { not?: HaNode; timeoutMs?: number }): Promise<HaNode>;
  /** Waits until the other node is a streaming replica (and, in synchronous mode, the sync standby). */
  waitForReplica(leader: HaNode, options?: { timeoutMs?: number }): Promise<HaNode>;
  /** Switches Patroni's synchronous_mode at run time (PATCH /config), and waits until the standby follows. */
  setSynchronous(leader: HaNode, synchronous: boolean): Promise<void>;
  /** SIGKILL of the node's postmaster and its children, then of its Patroni: a machine lost. */
  kill(node: HaNode): void;
  stop(): Promise<void>;
}

const PG_BIN = (() => {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((d) => existsSync(join(root, d, 'bin', 'postgres'))) : [];
  return majors.length > 0 ? join(root, majors.sort((a, b) => Number(b) - Number(a))[0]!, 'bin') : undefined;
})();

function requireTools(): void {
  const missing = ['etcd', 'patroni', 'haproxy'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  if (!PG_BIN) missing.push('postgresql (its server binaries under /usr/lib/postgresql)');
  if (missing.length > 0) {
    throw new Error(`the HA cluster needs ${missing.join(', ')}: apt-get install etcd-server patroni haproxy postgresql`);
  }
}

export async function startHaCluster(options: HaClusterOptions): Promise<HaCluster> {
  requireTools();
  const dir = mkdtempSync(join(tmpdir(), 'stripe-inbox-ha-'));
  const user = serverUser();
  if (user) chownSync(dir, user.uid, user.gid);
  chmodSync(dir, 0o700);
  const children: ChildProcess[] = [];
  const links: PartitionableLink[] = [];
  const launch = (name: string, command: string, args: string[], asPostgres = false) => {
    const log = createWriteStream(join(dir, `${name}.log`));
    const child = spawn(command, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], ...(asPostgres && user) });
    child.stdout.pipe(log);
    child.stderr.pipe(log);
    children.push(child);
    return child;
  };

  const stop = async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    // Patroni's postmasters outlive their Patroni: kill them by their data directories.
    for (const node of nodes) killPostmaster(join(dir, node.name));
    for (const link of links) link.close();
    await Promise.all(children.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')));
    rmSync(dir, { recursive: true, force: true });
  };

  const nodes: HaNode[] = [];
  try {
    const [etcdClient, etcdPeer, haproxyPort] = [await freePort(), await freePort(), await freePort()];
    launch('etcd', 'etcd', [
      '--name',
      'etcd0',
      '--data-dir',
      join(dir, 'etcd'),
      '--listen-client-urls',
      `http://127.0.0.1:${etcdClient}`,
      '--advertise-client-urls',
      `http://127.0.0.1:${etcdClient}`,
      '--listen-peer-urls',
      `http://127.0.0.1:${etcdPeer}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster',
      `etcd0=http://127.0.0.1:${etcdPeer}`,
    ]);
    await waitFor('etcd to answer', async () => (await fetch(`http://127.0.0.1:${etcdClient}/health`).catch(() => undefined))?.ok, {
      timeoutMs: 20_000,
      intervalMs: 100,
    });

    for (const name of ['node1', 'node2']) {
      const pgPort = await freePort();
      const replicationLink = await partitionableLink(`postgres://127.0.0.1:${pgPort}/postgres`);
      links.push(replicationLink);
      nodes.push({ name, pgPort, restPort: await freePort(), replicationLink });
    }
    for (const node of nodes) {
      const config = patroniConfig(node, { dir, etcdClient, synchronous: options.synchronous });
      const file = join(dir, `${node.name}.yml`);
      writeFileSync(file, JSON.stringify(config, null, 2)); // JSON is YAML
      if (user) chownSync(file, user.uid, user.gid);
      launch(node.name, 'patroni', [file], true);
      // The first node bootstraps the cluster; the second then clones it with pg_basebackup.
      if (node === nodes[0]) await waitFor(`${node.name} to lead`, async () => (await patroniRole(node)) === 'primary', { timeoutMs: 60_000, intervalMs: 200 });
    }

    const haproxyConfig = join(dir, 'haproxy.cfg');
    writeFileSync(haproxyConfig, haproxyConfigText(nodes, haproxyPort));
    launch('haproxy', 'haproxy', ['-f', haproxyConfig, '-db']);

    let synchronous = options.synchronous;
    const cluster: HaCluster = {
      nodes,
      url: (database) => `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${haproxyPort}/${database}`,
      nodeUrl: (node, database) => `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${node.pgPort}/${database}`,
      async waitForLeader({ not, timeoutMs = 60_000 } = {}) {
        return waitFor(
          'a Patroni leader',
          async () => {
            for (const node of nodes) if (node !== not && (await patroniRole(node)) === 'primary') return node;
            return undefined;
          },
          { timeoutMs, intervalMs: 100 },
        );
      },
      async waitForReplica(leader, { timeoutMs = 60_000 } = {}) {
        // The leader's own view: Patroni 3.0's /cluster does not say whether a replica streams.
        return waitFor(
          `a streaming ${synchronous ? 'sync' : 'async'} standby`,
          async () => {
            const client = new pg.Client({ connectionString: cluster.nodeUrl(leader, 'postgres'), connectionTimeoutMillis: 2_000 });
            try {
              await client.connect();
              const { rows } = await client.query<{ application_name: string; sync_state: string }>(
                `select application_name, sync_state from pg_stat_replication where state = 'streaming'`,
              );
              const standby = rows.find((row) => row.sync_state === (synchronous ? 'sync' : 'async'));
              return standby && nodes.find((node) => node.name === standby.application_name);
            } finally {
              await client.end().catch(() => {});
            }
          },
          { timeoutMs, intervalMs: 200 },
        );
      },
      async setSynchronous(leader, value) {
        const response = await fetch(`http://127.0.0.1:${leader.restPort}/config`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ synchronous_mode: value }),
        });
        if (!response.ok) throw new Error(`Patroni refused synchronous_mode: ${value}: ${response.status} ${await response.text()}`);
        synchronous = value;
        await cluster.waitForReplica(leader);
      },
      kill(node) {
        killPostmaster(join(dir, node.name));
        children[nodes.indexOf(node) + 1]!.kill('SIGKILL');
      },
      stop,
    };
    await waitFor(
      'HAProxy to route to the leader',
      async () => {
        const socket = net.connect(haproxyPort, '127.0.0.1');
        return new Promise<boolean>((resolve) => socket.once('connect', () => (socket.destroy(), resolve(true))).once('error', () => resolve(false)));
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    await cluster.waitForReplica(nodes[0]!);
    return cluster;
  } catch (error) {
    const logs = readdirSync(dir)
      .filter((file) => file.endsWith('.log'))
      .map((file) => `--- ${file}\n${readFileSync(join(dir, file), 'utf8').slice(-3_000)}`);
    await stop();
    throw new Error(`the HA cluster did not start: ${(error as Error).message}\n${logs.join('\n')}`, { cause: error });
  }
}

async function patroniRole(node: HaNode): Promise<string | undefined> {
  const response = await fetch(`http://127.0.0.1:${node.restPort}/patroni`, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
  if (!response) return undefined;
  const body = (await response.json().catch(() => ({}))) as { role?: string; state?: string };
  // Patroni 3.0 still says 'master' where later releases say 'primary'.
  return body.state === 'running' && (body.role === 'master' || body.role === 'primary') ? 'primary' : body.role;
}

function postmasterPid(dataDir: string): number | undefined {
  const file = join(dataDir, 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** SIGKILL of the postmaster and every child it has: nothing of the node is left to flush or answer. */
function killPostmaster(dataDir: string): void {
  const pid = postmasterPid(dataDir);
  if (!pid) return;
  const children = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
    .map(Number);
  for (const target of [pid, ...children]) {
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

function patroniConfig(node: HaNode, { dir, etcdClient, synchronous }: { dir: string; etcdClient: number; synchronous: boolean }) {
  const relayPort = new URL(node.replicationLink.url).port;
  return {
    scope: SCOPE,
    name: node.name,
    restapi: { listen: `127.0.0.1:${node.restPort}`, connect_address: `127.0.0.1:${node.restPort}` },
    etcd3: { hosts: `127.0.0.1:${etcdClient}` },
    log: { level: 'INFO' },
    bootstrap: {
      dcs: {
        // A leader's lock lives `ttl` seconds after its last renewal: the longest a dead leader
        // keeps the cluster without one. Production keeps Patroni's 30 s; the tests want the
        // failover within seconds, which loopback allows.
        ttl: 10,
        loop_wait: 1,
        retry_timeout: 3,
        // Promote a standby that lags this much: the asynchronous test's held-back WAL must not stop it.
        maximum_lag_on_failover: 64 * 1024 * 1024,
        synchronous_mode: synchronous,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          parameters: {
            wal_level: 'replica',
            hot_standby: 'on',
            max_wal_senders: 10,
            max_replication_slots: 10,
            wal_keep_size: '256MB',
            wal_log_hints: 'on',
            max_connections: 100,
          },
        },
      },
      initdb: [{ encoding: 'UTF8' }, { locale: 'C' }],
    },
    postgresql: {
      listen: `127.0.0.1:${node.pgPort}`,
      connect_address: `127.0.0.1:${relayPort}`,
      data_dir: join(dir, node.name),
      bin_dir: PG_BIN,
      pgpass: join(dir, `${node.name}.pgpass`),
      authentication: {
        superuser: { username: 'postgres', password: SUPERUSER_PASSWORD },
        replication: { username: 'replicator', password: 'replicator' },
        rewind: { username: 'postgres', password: SUPERUSER_PASSWORD },
      },
      pg_hba: ['local all all trust', 'host replication replicator 127.0.0.1/32 trust', 'host all all 127.0.0.1/32 trust'],
      parameters: { unix_socket_directories: dir },
    },
  };
}

// The leader is whichever server answers 200 on Patroni's /primary; a server marked down has its
// sessions shut, so the service's pools reconnect (to the new leader) instead of talking to a
// node that is no longer primary.
function haproxyConfigText(nodes: readonly HaNode[], port: number): string {
  return `global
  maxconn 500
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen postgres
  bind 127.0.0.1:${port}
  option httpchk
  http-check send meth GET uri /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
${nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.pgPort} check port ${node.restPort}`).join('\n')}
`;
}
