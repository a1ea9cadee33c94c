// Replication: what a standby costs ingest. The ingest part's naive handler and the service with
// ROLE=web (bench/parts/ingest.ts), run against a Patroni cluster on this machine through HAProxy
// (test/support/ha-cluster.ts: etcd, two PostgreSQL nodes, streaming replication), three ways in
// turn on the same cluster:
//   sync standby   synchronous_mode: true — a commit, and so a 2xx, waits until the standby has
//                  flushed the WAL; nothing acknowledged is lost with the leader
//   async standby  synchronous_mode: false (Patroni's default) — the standby trails; a failover
//                  may lose what it had not received
//   no standby     the standby stopped: the leader alone, the baseline
// The ratios to "no standby" are the figures that count (both nodes share this machine's two cores
// and its disk, so the standby's own work is in them too, as it would be on one host).
import { onCleanup } from '../support/cleanup.js';
import type { BenchOptions } from '../support/options.js';
import { ratio, type Figure } from '../support/report.js';
import { startHaCluster } from '../../test/support/ha-cluster.js';
import { benchIngest } from './ingest.js';

const MODES = ['sync standby', 'async standby', 'no standby'] as const;
type Mode = (typeof MODES)[number];
/** The ingest figures kept per mode; the rest (WAL, system calls) do not change with replication. */
const KEPT = ['postgres commit p50, 1 client', 'naive req/s', 'naive p99', 'web req/s', 'web p99', 'web CPU per event'];

export async function benchReplication(options: BenchOptions): Promise<Figure[]> {
  options.log('replication: starting a Patroni cluster (etcd, two nodes, HAProxy) in synchronous mode');
  const cluster = await startHaCluster({ synchronous: true });
  onCleanup('the Patroni cluster', () => cluster.stop());
  const leader = await cluster.waitForLeader();
  const standby = cluster.nodes.find((node) => node !== leader)!;
  const ingest = { ...options, serverUrl: cluster.url('postgres'), servers: ['naive', 'web'] };

  const measured = {} as Record<Mode, Figure[]>;
  for (const mode of MODES) {
    if (mode === 'async standby') await cluster.setSynchronous(leader, false);
    if (mode === 'no standby') cluster.kill(standby);
    options.log(`replication: ${mode}`);
    measured[mode] = (await benchIngest(ingest)).filter((figure) => KEPT.includes(figure.name));
  }

  const value = (mode: Mode, name: string) => measured[mode].find((figure) => figure.name === name)?.value ?? Number.NaN;
  const versus = (mode: Mode, name: string, unit: string): Figure => ({
    part: 'replication',
    name: `${mode} ÷ no standby: ${name}`,
    value: ratio(value(mode, name), value('no standby', name)),
    unit: '×',
    note: `${value(mode, name).toFixed(unit === 'ms' ? 1 : 0)} ${unit} vs ${value('no standby', name).toFixed(unit === 'ms' ? 1 : 0)} ${unit}`,
  });
  return [
    ...MODES.flatMap((mode) => measured[mode].map((figure) => ({ ...figure, part: 'replication', name: `${mode}: ${figure.name}` }))),
    ...(['sync standby', 'async standby'] as const).flatMap((mode) => [
      versus(mode, 'web req/s', 'req/s'),
      versus(mode, 'web p99', 'ms'),
      versus(mode, 'naive req/s', 'req/s'),
      versus(mode, 'postgres commit p50, 1 client', 'ms'),
    ]),
  ];
}
