// A TCP relay in front of Postgres that can stop passing bytes without closing anything: the
// half-open connections of a network partition, a frozen VM or a failover to another address,
// which a refused or reset connection would not show.
import net, { type AddressInfo } from 'node:net';

export interface PartitionableLink {
  /** `databaseUrl` with its port replaced by the relay's. */
  readonly url: string;
  /** The open connections stop passing bytes; with `alsoNew`, so do those opened later. */
  freeze(options: { alsoNew: boolean }): void;
  /** Ends the partition: the connections that lived through it are reset (bytes were lost), new ones pass. */
  thaw(): void;
  /** Ends the partition with a reset, which frees any stuck connection so its pool can close. */
  close(): void;
}

export async function partitionableLink(databaseUrl: string): Promise<PartitionableLink> {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  const frozen = new WeakSet<net.Socket>();
  let everything = false;
  // No Nagle on either side, as Postgres sets on its own sockets: a relay that holds small writes
  // for the peer's delayed ACK adds ~40 ms to every synchronous-replication round trip.
  const link = net.createServer({ noDelay: true }, (client) => {
    const upstream = net.connect({ port: Number(target.port || 5432), host: target.hostname, noDelay: true });
    sockets.add(client).add(upstream);
    const forward = (from: net.Socket, to: net.Socket) => from.on('data', (chunk) => everything || frozen.has(from) || to.write(chunk));
    forward(client, upstream);
    forward(upstream, client);
    const close = () => (client.destroy(), upstream.destroy(), sockets.delete(client), sockets.delete(upstream));
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => link.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.port = String((link.address() as AddressInfo).port);
  return {
    url: url.toString(),
    freeze({ alsoNew }) {
      for (const socket of sockets) frozen.add(socket);
      everything = alsoNew;
    },
    thaw() {
      everything = false;
      for (const socket of sockets) socket.destroy();
    },
    close() {
      link.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}
