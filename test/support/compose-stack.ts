// This checkout as a compose project on a real Docker engine, driven through `docker compose` and
// `docker` as a user drives them (test/deploy/compose-stack.compose.ts). The engine and the base
// images come from scripts/dev/docker-engine.sh and scripts/dev/local-images.sh; the project is a
// copy of the working tree (what a fresh clone holds, plus uncommitted work) with its own .env,
// project name and published port, so nothing of a developer's own stack or .env is touched.
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoPath } from '../deploy/deploy-files.js';

const run = promisify(execFile);

/**
 * The engine to use: DOCKER_HOST for every docker command of the test. Starts one when none
 * answers, and makes sure the base images are there. Throws with the scripts' output when it
 * cannot: CI must fail, not skip, where the engine does not start.
 */
export function startDockerEngine(): { DOCKER_HOST: string } {
  const engine = spawnSync('bash', [repoPath('scripts/dev/docker-engine.sh')], { encoding: 'utf8' });
  if (engine.status !== 0) throw new Error(`scripts/dev/docker-engine.sh failed (exit ${engine.status}):\n${engine.stderr}`);
  const line = engine.stdout.trim().split('\n').at(-1) ?? '';
  const match = /^DOCKER_HOST=(\S+)$/.exec(line);
  if (!match) throw new Error(`scripts/dev/docker-engine.sh printed no DOCKER_HOST line: ${engine.stdout}`);
  const env = { DOCKER_HOST: match[1]! };
  const images = spawnSync('bash', [repoPath('scripts/dev/local-images.sh')], { encoding: 'utf8', env: { ...process.env, ...env } });
  if (images.status !== 0) throw new Error(`scripts/dev/local-images.sh failed (exit ${images.status}):\n${images.stdout}\n${images.stderr}`);
  return env;
}

export interface Container {
  id: string;
  name: string;
  /** Its address on the project's network, which the host reaches directly (a bridge network). */
  ip: string;
  health: string | undefined;
  running: boolean;
  exitCode: number;
  restartCount: number;
  startedAt: string;
}

export class ComposeStack {
  readonly dir: string;
  readonly project = `si-test-${randomBytes(3).toString('hex')}`;
  private dotenv: Record<string, string>;

  constructor(
    private readonly docker: { DOCKER_HOST: string },
    dotenv: Record<string, string>,
  ) {
    this.dir = mkdtempSync(path.join(tmpdir(), 'stripe-inbox-stack-'));
    // git ls-files: what a clone holds plus untracked work, never node_modules, .env or .data.
    const listed = spawnSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: repoPath('.'), encoding: 'utf8' });
    if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
    for (const file of listed.stdout.split('\0').filter(Boolean)) {
      mkdirSync(path.dirname(path.join(this.dir, file)), { recursive: true });
      try {
        cpSync(repoPath(file), path.join(this.dir, file));
      } catch (error) {
        // A file deleted in the working tree but still in the index.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    // The containers call the test's fake Stripe on the host.
    writeFileSync(
      path.join(this.dir, 'compose.test.yml'),
      ['app', 'worker'].reduce((yaml, service) => `${yaml}  ${service}:\n    extra_hosts:\n      - host.docker.internal:host-gateway\n`, 'services:\n'),
    );
    this.dotenv = dotenv;
    this.writeDotenv();
  }

  /** Changes .env, as an operator edits it; applied by the next `up`. */
  setEnv(changes: Record<string, string>): void {
    this.dotenv = { ...this.dotenv, ...changes };
    this.writeDotenv();
  }

  private writeDotenv(): void {
    writeFileSync(
      path.join(this.dir, '.env'),
      Object.entries(this.dotenv)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(''),
    );
  }

  /** A new release in the copy: package.json's version, which /healthz reports. */
  release(version: string): void {
    for (const file of ['package.json', 'package-lock.json']) {
      const json = JSON.parse(readFileSync(path.join(this.dir, file), 'utf8')) as { version: string; packages?: Record<string, { version?: string }> };
      json.version = version;
      if (json.packages?.['']) json.packages[''].version = version;
      writeFileSync(path.join(this.dir, file), `${JSON.stringify(json, null, 2)}\n`);
    }
  }

  get env(): NodeJS.ProcessEnv {
    return { ...process.env, ...this.docker };
  }

  async dockerCli(args: string[], timeoutMs = 120_000): Promise<string> {
    try {
      const { stdout } = await run('docker', args, { cwd: this.dir, env: this.env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
      return stdout;
    } catch (error) {
      const e = error as { stderr?: string; stdout?: string; code?: unknown };
      throw new Error(`docker ${args.join(' ')} failed (${String(e.code)}):\n${e.stderr ?? ''}${e.stdout ?? ''}`, { cause: error });
    }
  }

  /** `docker compose …` with the CI override (local base images, Postgres 15) and the test's. */
  compose(args: string[], timeoutMs = 300_000): Promise<string> {
    const files = ['docker-compose.yml', 'scripts/dev/local-images/compose.override.yml', 'compose.test.yml'].flatMap((f) => ['-f', f]);
    return this.dockerCli(['compose', '-p', this.project, ...files, ...args], timeoutMs);
  }

  async containerIds(service: string): Promise<string[]> {
    return (await this.compose(['ps', '-a', '-q', service])).split('\n').filter(Boolean);
  }

  async inspect(id: string): Promise<Container> {
    const [raw] = JSON.parse(await this.dockerCli(['inspect', id])) as Array<{
      Id: string;
      Name: string;
      RestartCount: number;
      State: { Running: boolean; ExitCode: number; StartedAt: string; Health?: { Status: string } };
      NetworkSettings: { Networks: Record<string, { IPAddress: string }> };
    }>;
    return {
      id: raw!.Id,
      name: raw!.Name.replace(/^\//, ''),
      ip: Object.values(raw!.NetworkSettings.Networks)[0]?.IPAddress ?? '',
      health: raw!.State.Health?.Status,
      running: raw!.State.Running,
      exitCode: raw!.State.ExitCode,
      restartCount: raw!.RestartCount,
      startedAt: raw!.State.StartedAt,
    };
  }

  /** One query as the stack's own database user, through `compose exec` (Postgres is not published). */
  async psql(query: string): Promise<string[][]> {
    const out = await this.compose([
      'exec',
      '-T',
      'postgres',
      'psql',
      '-U',
      this.dotenv.POSTGRES_USER ?? 'stripe_inbox',
      '-d',
      this.dotenv.POSTGRES_DB ?? 'stripe_inbox',
      '-v',
      'ON_ERROR_STOP=1',
      '-At',
      '-F',
      '\t',
      '-c',
      query,
    ]);
    return out
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\t'));
  }

  async count(query: string): Promise<number> {
    return Number((await this.psql(query))[0]?.[0]);
  }

  /** Resident memory of a container, in MiB, as `docker stats` reports it. */
  async memoryMiB(id: string): Promise<number> {
    const usage = (await this.dockerCli(['stats', '--no-stream', '--format', '{{.MemUsage}}', id])).split('/')[0]!.trim();
    const match = /^([\d.]+)\s*([KMG]i?B)$/.exec(usage);
    if (!match) throw new Error(`unexpected docker stats memory: ${usage}`);
    const factor = { KiB: 1 / 1024, KB: 1 / 1024, MiB: 1, MB: 1, GiB: 1024, GB: 1024 }[match[2]!] ?? 1;
    return Number(match[1]) * factor;
  }

  /** The host pid of the service's node process inside a container (`docker top`: host pid namespace). */
  async nodePid(id: string): Promise<number> {
    const rows = (await this.dockerCli(['top', id, '-o', 'pid,args'])).split('\n').slice(1);
    const node = rows.map((r) => r.trim().split(/\s+/)).find((cols) => cols[1] === 'node');
    if (!node) throw new Error(`no node process in container ${id}:\n${rows.join('\n')}`);
    return Number(node[0]);
  }

  async down(): Promise<void> {
    await this.compose(['down', '-v', '--remove-orphans', '--rmi', 'local', '-t', '5']).catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}
