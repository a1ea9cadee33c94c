// `npx tsx bench/history.ts [commit…] [--commits-file FILE] [--short]`
// Attribution over history: for each commit, in a detached worktree of its own, installs that
// commit's dependencies (its lockfile, its Node 26 from the `node` package) and runs that commit's
// own bench: ingest (naive, web, all; two rounds, the baselines interleaved as its bench does) and
// drain. Then one markdown table, a row per commit. One bench at a time: the figures are per-event
// CPU and ratios to baselines measured in the same run, which a second bench on the same cores
// would spoil. Figures a commit's bench does not print are n/a.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HISTORY_DIR = '/tmp/stripe-inbox-history';
const FIRST_COMMIT = 'a2293b5';
const MAINLINE = 'main';
const SERVERS = 'naive,web,all';
const INGEST_ROUNDS = '2';
const INSTALL_STAMP = '.stripe-inbox-history-lock-sha256';
const OTHER_BENCH_POLL_MS = 15_000;

const USAGE = `usage: npx tsx bench/history.ts [commit…] [options]

Runs each commit's own bench (ingest with the servers ${SERVERS}, ${INGEST_ROUNDS} rounds; then drain),
one commit after another, and prints one markdown table with a row per commit. With no commits:
${FIRST_COMMIT}, every merge on ${MAINLINE}'s first-parent line since, and HEAD.

Each commit gets a detached worktree, ${HISTORY_DIR}/<sha>, reused when it is there (a reused
one must be clean and at its commit), with its dependencies from npm ci --no-audit --no-fund
(skipped when its lockfile has not changed since). The benches' own output is kept in
${HISTORY_DIR}/runs/. A full run takes several minutes per commit; it waits while another
bench (bench/run.ts) runs on this machine, and refuses to start beside another history run.

options:
  --short              pass --short to every bench: checks this script, the figures mean nothing
  --commits-file FILE  the commits, one a line (blank lines and # comments ignored), instead of arguments
  -h, --help           this text

Postgres: DATABASE_URL, as for npm run bench (each bench creates and drops its own databases).

The worktrees are left for the next run. To remove them, in this repository:
  rm -rf ${HISTORY_DIR} && git worktree prune`;

class UsageError extends Error {}

interface Commit {
  sha: string;
  subject: string;
}

interface Figure {
  name: string;
  value: number;
  note?: string;
}

interface PartResult {
  figures: Figure[];
  /** Why figures may be missing: the bench's own failures, its exit code, unparsable output. */
  problems: string[];
  seconds: number;
  /** Waited for another bench on this machine before this one started. */
  waitedSeconds: number;
}

interface CommitResult {
  commit: Commit;
  ingest?: PartResult;
  drain?: PartResult;
  /** One line for the notes under the table: node, output format, timings, what went wrong. */
  notes: string[];
  seconds: number;
}

/** The checkout this script is in: its git repository holds the commits and their worktrees. */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let current: ChildProcess | undefined;
let interrupted: NodeJS.Signals | undefined;

function git(args: string[], cwd: string = root): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

const log = (message: string) => process.stderr.write(`history: ${message}\n`);

function parseOptions(argv: string[]): { commits: Commit[]; short: boolean } | 'help' {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: { short: { type: 'boolean' }, 'commits-file': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) return 'help';
  const file = values['commits-file'];
  if (file !== undefined && positionals.length > 0) throw new UsageError('give the commits as arguments or in --commits-file, not both');
  let revisions: string[];
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new UsageError(`--commits-file: cannot read ${file}: ${(error as Error).message}`);
    }
    revisions = text
      .split('\n')
      .map((line) => line.replace(/#.*/, '').trim())
      .filter((line) => line !== '');
    if (revisions.length === 0) throw new UsageError(`--commits-file: ${file} names no commit`);
  } else {
    revisions = positionals.length > 0 ? positionals : defaultRevisions();
  }
  const commits: Commit[] = [];
  for (const revision of revisions) {
    if (revision.startsWith('-')) throw new UsageError(`'${revision}' is not a commit (options: --short, --commits-file, --help)`);
    const sha = resolve(revision);
    if (commits.some((c) => c.sha === sha)) {
      log(`${revision} is ${sha.slice(0, 7)}, already listed: measured once`);
      continue;
    }
    for (const needed of ['bench/run.ts', 'bench/parts/ingest.ts', 'bench/parts/drain.ts', 'package-lock.json']) {
      if (!exists(sha, needed)) throw new UsageError(`commit ${revision} (${sha.slice(0, 7)}) has no ${needed}: its bench cannot run`);
    }
    commits.push({ sha, subject: git(['log', '-1', '--format=%s', sha]) });
  }
  return { commits, short: values.short === true };
}

/** The first commit, the merges on the mainline's first-parent line since it (oldest first), and HEAD. */
function defaultRevisions(): string[] {
  resolve(FIRST_COMMIT);
  resolve(MAINLINE);
  const merges = git(['log', '--first-parent', '--merges', '--reverse', '--format=%H', `${FIRST_COMMIT}..${MAINLINE}`])
    .split('\n')
    .filter(Boolean);
  return [FIRST_COMMIT, ...merges, 'HEAD'];
}

function resolve(revision: string): string {
  try {
    return git(['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{commit}`]);
  } catch {
    throw new UsageError(`'${revision}' is not a commit in ${root}`);
  }
}

function exists(sha: string, file: string): boolean {
  try {
    git(['cat-file', '-e', `${sha}:${file}`]);
    return true;
  } catch {
    return false;
  }
}

/** The commit's worktree: made detached at the commit, or one made before, checked to be clean and there. */
function worktree(sha: string): string {
  const dir = path.join(HISTORY_DIR, sha);
  if (!existsSync(dir)) {
    log(`${sha.slice(0, 7)}: git worktree add --detach ${dir}`);
    git(['worktree', 'add', '--detach', dir, sha]);
    return dir;
  }
  let head: string;
  try {
    head = git(['rev-parse', 'HEAD'], dir);
  } catch {
    throw new Error(`${dir} exists but is not a git worktree: move it away, or remove it and run git worktree prune`);
  }
  if (head !== sha)
    throw new Error(
      `${dir} is at ${head.slice(0, 7)}, not ${sha.slice(0, 7)}: git -C ${dir} checkout --detach ${sha}, or remove it (git worktree remove --force ${dir})`,
    );
  const changed = git(['status', '--porcelain', '--untracked-files=normal'], dir);
  if (changed !== '')
    throw new Error(
      `${dir} has changes (git -C ${dir} status): its bench would not measure ${sha.slice(0, 7)}; restore it or remove it (git worktree remove --force ${dir})`,
    );
  log(`${sha.slice(0, 7)}: reusing ${dir}`);
  return dir;
}

/** npm ci, unless this script installed from the same lockfile before. The commit's Node 26 comes with it (the `node` package). */
async function install(dir: string): Promise<void> {
  const lockHash = createHash('sha256')
    .update(readFileSync(path.join(dir, 'package-lock.json')))
    .digest('hex');
  const stamp = path.join(dir, 'node_modules', INSTALL_STAMP);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === lockHash) {
    log(`${path.basename(dir).slice(0, 7)}: dependencies installed from this lockfile already`);
    return;
  }
  const { exitCode } = await run('npm', ['ci', '--no-audit', '--no-fund'], dir, 'inherit-to-stderr');
  if (exitCode !== 0) throw new Error(`npm ci exited ${exitCode}`);
  writeFileSync(stamp, `${lockHash}\n`);
}

function nodeVersion(dir: string): string {
  const bin = path.join(dir, 'node_modules', '.bin', 'node');
  if (!existsSync(bin)) return `no node_modules/.bin/node: the bench runs on ${process.version} from PATH`;
  return `node ${execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim()}`;
}

/**
 * The environment of a commit's npm: this process's, less what npx and npm run added (npm_*
 * settings and node_modules/.bin directories naming this checkout), as .ci/run has it.
 */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(key) && key !== 'INIT_CWD') env[key] = value;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((entry) => !/[\\/]node_modules[\\/]\.bin$/.test(entry) && !/[\\/]node-gyp-bin$/.test(entry))
    .join(path.delimiter);
  return env;
}

/** Runs a command in `dir`; its stderr (and for `inherit-to-stderr` its stdout too) passes through to ours. */
function run(command: string, args: string[], dir: string, stdout: 'capture' | 'inherit-to-stderr'): Promise<{ exitCode: number; stdout: string }> {
  return new Promise((done, fail) => {
    // In this process's group: a Ctrl-C reaches the bench itself, which stops its children and
    // drops its databases (bench/support/cleanup.ts); a second one would skip that.
    const child = spawn(command, args, { cwd: dir, env: childEnv(), stdio: ['ignore', stdout === 'capture' ? 'pipe' : 2, 2] });
    current = child;
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.on('error', (error) => {
      current = undefined;
      fail(error);
    });
    child.on('close', (code, signal) => {
      current = undefined;
      done({ exitCode: code ?? (signal ? 128 : 1), stdout: text });
    });
  });
}

/** What the commit's bench offers, from its own --help. */
async function capabilities(dir: string): Promise<{ json: boolean; servers: boolean; rounds: boolean }> {
  const help = await run('npm', ['run', '-s', 'bench', '--', '--help'], dir, 'capture');
  if (help.exitCode !== 0) throw new Error(`npm run bench -- --help exited ${help.exitCode}`);
  return { json: help.stdout.includes('--json'), servers: help.stdout.includes('--servers'), rounds: help.stdout.includes('--rounds') };
}

/** Pids of bench/run.ts processes on this machine (none are ours between two benches). */
function otherBenches(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.some((arg) => /(^|\/)bench\/run\.ts$/.test(arg))) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/** Waits while another bench runs here; returns the seconds waited. */
async function waitForOtherBenches(): Promise<number> {
  const started = Date.now();
  let told = false;
  for (let pids = otherBenches(); pids.length > 0 && !interrupted; pids = otherBenches()) {
    if (!told) log(`another bench is running (pid ${pids.join(', ')}): waiting for it to end, two would spoil each other's figures`);
    told = true;
    await new Promise((resume) => setTimeout(resume, OTHER_BENCH_POLL_MS));
  }
  return (Date.now() - started) / 1000;
}

async function benchPart(
  dir: string,
  sha: string,
  part: 'ingest' | 'drain',
  can: { json: boolean; servers: boolean; rounds: boolean },
  short: boolean,
): Promise<PartResult> {
  const args = ['run', '-s', 'bench', '--', part];
  if (part === 'ingest' && can.servers) args.push('--servers', SERVERS);
  if (part === 'ingest' && can.rounds) args.push('--rounds', INGEST_ROUNDS);
  if (short) args.push('--short');
  if (can.json) args.push('--json');
  const waitedSeconds = await waitForOtherBenches();
  if (interrupted) throw new Error(`${interrupted}: not started`);
  log(`${sha.slice(0, 7)}: npm ${args.join(' ')}`);
  const started = Date.now();
  const result = await run('npm', args, dir, 'capture');
  const seconds = (Date.now() - started) / 1000;
  const saved = path.join(HISTORY_DIR, 'runs', `${sha}.${part}${short ? '.short' : ''}.${can.json ? 'json' : 'txt'}`);
  writeFileSync(saved, result.stdout);
  const problems: string[] = [];
  if (result.exitCode !== 0) problems.push(`its bench exited ${result.exitCode}`);
  let figures: Figure[] = [];
  try {
    if (can.json) {
      const parsed = parseJsonOutput(result.stdout);
      figures = parsed.figures;
      problems.push(...parsed.failures.map((f) => `${f.part} failed: ${f.error}`));
    } else {
      figures = parseTableOutput(result.stdout);
    }
  } catch (error) {
    problems.push(`output not understood (${(error as Error).message}; kept in ${saved})`);
  }
  if (figures.length === 0 && problems.length === 0) problems.push(`no figures (output in ${saved})`);
  return { figures, problems, seconds, waitedSeconds };
}

/** `--json`: one object with `figures` (a NaN is null there) and `failures`. */
function parseJsonOutput(stdout: string): { figures: Figure[]; failures: Array<{ part: string; error: string }> } {
  const start = stdout.search(/^\{/m);
  if (start < 0) throw new Error('no JSON object on stdout');
  const data = JSON.parse(stdout.slice(start)) as {
    figures?: Array<{ name: string; value: number | null; note?: string }>;
    failures?: Array<{ part: string; error: string }>;
  };
  if (!Array.isArray(data.figures)) throw new Error('no figures in the JSON');
  return {
    figures: data.figures.map((f) => ({ name: f.name, value: f.value ?? Number.NaN, ...(f.note !== undefined && { note: f.note }) })),
    failures: data.failures ?? [],
  };
}

/**
 * The printed tables (bench/support/report.ts formatTable): a header `part  figure  value  target
 * …  note`, cells padded and joined by two spaces, the value right-aligned under its header.
 */
function parseTableOutput(stdout: string): Figure[] {
  const lines = stdout.split('\n');
  const figures: Figure[] = [];
  let columns: { figure: number; valueEnd: number; note: number } | undefined;
  for (const line of lines) {
    const header = /^part {2,}figure {2,}value {2,}target {2,}.*\bnote$/.exec(line.trimEnd());
    if (header) {
      const figure = line.indexOf('figure');
      const valueEnd = line.indexOf('value', figure) + 'value'.length;
      columns = { figure, valueEnd, note: line.lastIndexOf('note') };
      continue;
    }
    if (!columns || line.trim() === '') {
      columns = line.trim() === '' ? undefined : columns;
      continue;
    }
    const cells = line.slice(columns.figure, columns.valueEnd).trim().split(/ {2,}/);
    if (cells.length < 2) continue;
    const name = cells[0]!;
    const shown = cells[cells.length - 1]!;
    const number = /^-?[\d,]+(?:\.\d+)?/.exec(shown);
    const note = line.slice(columns.note).trim();
    figures.push({ name, value: number ? Number(number[0].replace(/,/g, '')) : Number.NaN, ...(note !== '' && { note }) });
  }
  return figures;
}

async function measure(commit: Commit, short: boolean): Promise<CommitResult> {
  const started = Date.now();
  const result: CommitResult = { commit, notes: [], seconds: 0 };
  const sha = commit.sha.slice(0, 7);
  try {
    const dir = worktree(commit.sha);
    const installStarted = Date.now();
    await install(dir);
    const installSeconds = (Date.now() - installStarted) / 1000;
    const node = nodeVersion(dir);
    log(`${sha}: ${node}`);
    const can = await capabilities(dir);
    const missing = [
      !can.json && '--json (its table parsed)',
      !can.servers && '--servers (every default server ran)',
      !can.rounds && '--rounds (its default rounds)',
    ].filter(Boolean);
    result.notes.push(node, `install ${installSeconds.toFixed(0)} s`, ...(missing.length > 0 ? [`its bench has no ${missing.join(', no ')}`] : []));
    for (const part of ['ingest', 'drain'] as const) {
      if (interrupted) break;
      const measured = await benchPart(dir, commit.sha, part, can, short);
      result[part] = measured;
      const waited = measured.waitedSeconds >= 1 ? ` (after waiting ${measured.waitedSeconds.toFixed(0)} s for another bench)` : '';
      result.notes.push(`${part} ${measured.seconds.toFixed(0)} s${waited}`, ...measured.problems.map((p) => `${part}: ${p}`));
    }
  } catch (error) {
    result.notes.push(`not measured: ${(error as Error).message}`);
    log(`${sha}: ${(error as Error).message}`);
  }
  result.seconds = (Date.now() - started) / 1000;
  log(`${sha}: done in ${result.seconds.toFixed(0)} s`);
  return result;
}

// The table.

const NA = 'n/a';

function find(part: PartResult | undefined, name: string): Figure | undefined {
  const figure = part?.figures.find((f) => f.name === name);
  return figure && Number.isFinite(figure.value) ? figure : undefined;
}

const fixed = (digits: number) => (figure: Figure | undefined) => (figure ? figure.value.toFixed(digits) : NA);
const times = (figure: Figure | undefined) => (figure ? `${figure.value.toFixed(2)} ×` : NA);
const whole = (figure: Figure | undefined) => (figure ? Math.round(figure.value).toLocaleString('en-US') : NA);

/** Total CPU per event with its process and Postgres shares, which the figure's note gives. */
function cpu(figure: Figure | undefined): string {
  if (!figure) return NA;
  const split = /process ([\d.]+) ms \+ Postgres backends ([\d.]+) ms/.exec(figure.note ?? '');
  return split ? `${figure.value.toFixed(2)} (${split[1]} + ${split[2]})` : figure.value.toFixed(2);
}

function shortSubject(subject: string): string {
  const merged = /^Merge branch '([^']+)'/.exec(subject);
  const text = merged ? `merge ${merged[1]}` : subject;
  const cut = text.length > 48 ? `${text.slice(0, 47).trimEnd()}…` : text;
  return cut.replace(/\|/g, '\\|');
}

function table(results: readonly CommitResult[]): string {
  const header = [
    'commit',
    'subject',
    'naive req/s',
    'web req/s ÷ naive',
    'all req/s ÷ naive',
    'web CPU/event ms (process + Postgres)',
    'all CPU/fulfilled event ms (process + Postgres)',
    'WAL records/event web',
    'WAL records/event all',
    'p99 ÷ naive web',
    'p99 ÷ naive all',
    'drain ev/s ÷ bare graphile-worker',
  ];
  const rows = results.map(({ commit, ingest, drain }) => [
    commit.sha.slice(0, 7),
    shortSubject(commit.subject),
    whole(find(ingest, 'naive req/s')),
    times(find(ingest, 'web req/s ÷ naive')),
    times(find(ingest, 'all req/s ÷ naive')),
    cpu(find(ingest, 'web CPU per event')),
    cpu(find(ingest, 'all CPU per event')),
    fixed(1)(find(ingest, 'web WAL records per event')),
    fixed(1)(find(ingest, 'all WAL records per event')),
    times(find(ingest, 'web p99 ÷ naive p99')),
    times(find(ingest, 'all p99 ÷ naive p99')),
    times(find(drain, 'service/graphile-worker')),
  ]);
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map((_, i) => (i < 2 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

/** One history run at a time: a lock file with its pid, taken over when that process is gone. */
function takeLock(): () => void {
  const lock = path.join(HISTORY_DIR, '.lock');
  try {
    const holder = Number(readFileSync(lock, 'utf8'));
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
      throw new UsageError(`another history run (pid ${holder}) is running: one bench at a time (${lock})`);
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
  }
  writeFileSync(lock, `${process.pid}\n`);
  return () => {
    try {
      if (Number(readFileSync(lock, 'utf8')) === process.pid) rmSync(lock);
    } catch {
      // already gone
    }
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(process.argv.slice(2));
  } catch (error) {
    const parseError = (error as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS') === true;
    if (!(error instanceof UsageError) && !parseError) throw error;
    process.stderr.write(`error: ${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (parsed === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { commits, short } = parsed;
  mkdirSync(path.join(HISTORY_DIR, 'runs'), { recursive: true });
  let release: () => void;
  try {
    release = takeLock();
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n`);
    return 2;
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (interrupted) return;
      interrupted = signal;
      log(`${signal}: the bench running stops and drops its databases; no further commit starts`);
      // A Ctrl-C reached the bench through the process group; a SIGTERM was sent to this process only.
      if (signal === 'SIGTERM') current?.kill('SIGTERM');
    });
  }
  const started = Date.now();
  log(`${commits.length} commit(s), one after another${short ? ', --short (figures mean nothing)' : ''}: ${commits.map((c) => c.sha.slice(0, 7)).join(' ')}`);
  const results: CommitResult[] = [];
  try {
    for (const commit of commits) {
      if (interrupted) break;
      results.push(await measure(commit, short));
    }
  } finally {
    release();
  }
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const notes = results.map((r) => `- ${r.commit.sha.slice(0, 7)}: ${r.seconds.toFixed(0)} s; ${r.notes.join('; ')}`);
  process.stdout.write(
    [
      `Each commit's own bench, ${short ? '--short: the figures mean nothing' : `ingest --servers ${SERVERS} --rounds ${INGEST_ROUNDS}, then drain`}; ${results.length} commit(s) in ${minutes} min${interrupted ? `, stopped by ${interrupted}` : ''}.`,
      '',
      table(results),
      '',
      ...notes,
      '',
    ].join('\n'),
  );
  if (interrupted) return interrupted === 'SIGINT' ? 130 : 143;
  return results.every((r) => r.ingest && r.drain && r.ingest.problems.length === 0 && r.drain.problems.length === 0) ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    process.stderr.write(`history failed: ${(error as Error).message}\n`);
    process.exitCode = 1;
  },
);
