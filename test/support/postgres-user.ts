// Postgres and PgBouncer refuse to run as root. When the tests run as root (CI here), the servers
// they start run as the `postgres` user the Debian packages create, and own their folders.
import { execFileSync } from 'node:child_process';

/** The uid and gid to run a server as: `postgres`'s when this process is root, else undefined (run as ourselves). */
export function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}
