// The facts a figure depends on, printed with every run: cores, memory, Node, Postgres and its
// durability settings, and the commit measured (with a note when the tree has local changes).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { serverFacts } from './database.js';

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

export async function machineFacts(serverUrl: string): Promise<Record<string, string>> {
  const pg = await serverFacts(serverUrl);
  const commit = git(['rev-parse', '--short', 'HEAD']) || 'unknown';
  // Others edit the same tree while a bench runs: name the uncommitted service files and
  // fingerprint the diff, so two runs can be told apart.
  const changed = [
    ...git(['diff', 'HEAD', '--name-only', '--', 'src', 'tasks', 'sql']).split('\n'),
    ...git(['ls-files', '--others', '--exclude-standard', '--', 'src', 'tasks', 'sql'])
      .split('\n')
      .map((f) => `${f} (new)`),
  ].filter((f) => f !== '' && f !== ' (new)');
  const fingerprint = createHash('sha1')
    .update(git(['diff', 'HEAD', '--', 'src', 'tasks', 'sql']))
    .digest('hex')
    .slice(0, 8);
  return {
    commit: changed.length > 0 ? `${commit} + uncommitted changes to ${changed.join(', ')} (diff ${fingerprint})` : commit,
    cpus: `${availableParallelism()} × ${cpus()[0]?.model.trim() ?? 'unknown'}`,
    memory: `${(totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    // Other work on the machine shares the cores with the load generator, server and Postgres.
    'load average at start': loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
    node: process.version,
    postgres: pg.server_version ?? 'unknown',
    'postgres settings': `shared_buffers=${pg.shared_buffers}, synchronous_commit=${pg.synchronous_commit}, fsync=${pg.fsync}, wal_sync_method=${pg.wal_sync_method}, max_connections=${pg.max_connections}`,
  };
}
