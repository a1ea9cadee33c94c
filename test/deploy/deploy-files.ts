// Readers for the deployment files, as the tools that use them see them: the Dockerfile as
// instructions grouped by stage, docker-compose.yml as YAML plus compose's ${VAR} interpolation,
// and .env.example as variables with the comment above each. No Docker engine runs on the test
// machines, so test/deploy checks these files and runs what the image would run.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const repoPath = (name: string) => path.join(REPO, name);

// ---- Dockerfile ----

export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

export interface Stage {
  name: string | undefined;
  /** What FROM names: an image, or an earlier stage. */
  from: string;
  instructions: Instruction[];
}

/** Instructions by stage; continuation lines joined, comments dropped (as BuildKit does). */
export function readDockerfile(file = repoPath('Dockerfile')): Stage[] {
  const stages: Stage[] = [];
  let pending = '';
  let start = 0;
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, index) => {
      const line = raw.trim();
      if (line.startsWith('#') || (pending === '' && line === '')) return;
      if (pending === '') start = index + 1;
      if (line.endsWith('\\')) {
        pending += `${line.slice(0, -1)} `;
        return;
      }
      const full = `${pending}${line}`.trim();
      pending = '';
      const match = /^(\S+)\s*([\s\S]*)$/.exec(full);
      if (!match) return;
      const instruction = { keyword: match[1]!.toUpperCase(), args: match[2]!, line: start };
      if (instruction.keyword === 'FROM') {
        const { rest } = splitFlags(instruction.args);
        const [from = '', as, name] = rest.split(/\s+/);
        stages.push({ name: as?.toUpperCase() === 'AS' ? name : undefined, from, instructions: [] });
      } else if (stages.length === 0) {
        if (instruction.keyword !== 'ARG') throw new Error(`Dockerfile line ${start}: ${instruction.keyword} before FROM`);
      } else {
        stages.at(-1)!.instructions.push(instruction);
      }
    });
  return stages;
}

/** The image a stage finally builds on, following `FROM <earlier stage>`. */
export function baseImage(stages: readonly Stage[], stage: Stage): string {
  const parent = stages.find((s) => s.name !== undefined && s.name === stage.from);
  return parent && parent !== stage ? baseImage(stages, parent) : stage.from;
}

/** A stage's instructions after those of the stages it is built FROM, in order. */
export function instructionsOf(stages: readonly Stage[], stage: Stage): Instruction[] {
  const parent = stages.find((s) => s.name !== undefined && s.name === stage.from);
  return [...(parent && parent !== stage ? instructionsOf(stages, parent) : []), ...stage.instructions];
}

/** Leading `--name=value` options of an instruction (HEALTHCHECK, COPY, FROM) and the rest. */
export function splitFlags(args: string): { flags: Map<string, string>; rest: string } {
  const flags = new Map<string, string>();
  let rest = args.trim();
  for (let m = /^--([\w-]+)(?:=(\S*))?\s*/.exec(rest); m; m = /^--([\w-]+)(?:=(\S*))?\s*/.exec(rest)) {
    flags.set(m[1]!, m[2] ?? 'true');
    rest = rest.slice(m[0].length);
  }
  return { flags, rest };
}

/** The JSON array of an exec-form instruction, or undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.trim().startsWith('[')) return undefined;
  try {
    const parsed = JSON.parse(args) as unknown;
    return Array.isArray(parsed) && parsed.every((a) => typeof a === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** ENV's `KEY=value …` pairs (and the legacy `ENV KEY value`). */
export function envPairs(args: string): Map<string, string> {
  const pairs = new Map<string, string>();
  if (!/^\S+=/.test(args)) {
    const [key = '', ...value] = args.split(/\s+/);
    return pairs.set(key, value.join(' '));
  }
  for (const m of args.matchAll(/([\w.-]+)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g)) pairs.set(m[1]!, unquote(m[2]!));
  return pairs;
}

/** COPY's sources and destination (both forms), and whether it copies from another stage. */
export function copyArgs(args: string): { sources: string[]; dest: string; from: string | undefined } {
  const { flags, rest } = splitFlags(args);
  const parts = execForm(rest) ?? rest.split(/\s+/);
  return { sources: parts.slice(0, -1), dest: parts.at(-1) ?? '', from: flags.get('from') };
}

// ---- docker-compose.yml ----

export type EnvironmentValue = string | number | boolean | null;

export interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  depends_on?: Record<string, { condition?: string }> | string[];
  environment?: Record<string, EnvironmentValue>;
  env_file?: unknown;
  ports?: Array<string | Record<string, unknown>>;
  volumes?: Array<string | Record<string, unknown>>;
  healthcheck?: { test?: string[] | string; disable?: boolean };
  init?: boolean;
  restart?: string;
  stop_grace_period?: string;
  profiles?: string[];
  sysctls?: Record<string, EnvironmentValue> | string[];
}

export interface ComposeFile {
  name?: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

export function readCompose(file = repoPath('docker-compose.yml')): ComposeFile {
  const parsed = parse(readFileSync(file, 'utf8'), { merge: true }) as unknown;
  if (typeof parsed !== 'object' || parsed === null || !('services' in parsed)) throw new Error(`${file} has no services`);
  return parsed as ComposeFile;
}

export function composeService(compose: ComposeFile, name: string): ComposeService {
  const service = compose.services[name];
  if (!service) throw new Error(`docker-compose.yml has no service ${name}`);
  return service;
}

/** A service's `environment` as a map (the list form is refused: the tests read the map). */
export function environmentOf(service: ComposeService): Record<string, string> {
  const env = service.environment;
  if (env === undefined || Array.isArray(env)) throw new Error('environment must be a map (KEY: value)');
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

// ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, $VAR; $$ is a literal $.
const INTERPOLATION = /\$(?:(\$)|\{([A-Za-z_]\w*)(?:(:?[-?])([^}]*))?\}|([A-Za-z_]\w*))/g;

/** Compose's interpolation of one value (nested defaults are not used, so not supported). */
export function interpolate(value: string, env: Readonly<Record<string, string | undefined>>): string {
  return value.replace(INTERPOLATION, (_m, dollar?: string, braced?: string, op?: string, arg?: string, bare?: string) => {
    if (dollar) return '$';
    const name = (braced ?? bare)!;
    const current = env[name];
    const missing = op?.startsWith(':') ? !current : current === undefined;
    if (!missing || op === undefined) return current ?? '';
    if (op.endsWith('?')) throw new Error(`${name}: ${arg}`);
    return arg ?? '';
  });
}

/** Every variable interpolated anywhere in the file (escaped $${…} excluded). */
export function interpolatedVariables(compose: ComposeFile): Set<string> {
  const names = new Set<string>();
  const visit = (value: unknown): void => {
    if (typeof value === 'string') {
      for (const m of value.matchAll(INTERPOLATION)) if (!m[1]) names.add((m[2] ?? m[5])!);
    } else if (Array.isArray(value)) value.forEach(visit);
    else if (typeof value === 'object' && value !== null) Object.values(value).forEach(visit);
  };
  visit(compose);
  return names;
}

/** A duration in compose syntax (`35s`, `1m30s`, `500ms`) in milliseconds. */
export function durationMs(value: string): number {
  const units: Record<string, number> = { us: 0.001, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(us|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== value) throw new Error(`not a compose duration: ${value}`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]!]!, 0);
}

// ---- The container's environment ----

/** Values a real .env holds for the variables .env.example leaves empty (test-mode Stripe). */
export const EXAMPLE_SECRETS = {
  POSTGRES_PASSWORD: 'b3f1c0ffee0123456789abcdef',
  STRIPE_WEBHOOK_SECRET: 'whsec_test_deploy_0123456789abcdef',
  STRIPE_SECRET_KEY: 'sk_test_deploy_0123456789abcdefghij',
  API_TOKEN: 'deploy-api-token-0123456789',
  ADMIN_TOKEN: 'deploy-admin-token-0123456789',
  CHECKOUT_SUCCESS_URL: 'https://shop.example/thanks?session_id={CHECKOUT_SESSION_ID}',
  CHECKOUT_CANCEL_URL: 'https://shop.example/pricing',
} as const;

/** A compose service's environment as its container gets it, for a project .env (`dotenv`). */
export function containerEnvironment(service: ComposeService, dotenv: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(environmentOf(service)).map(([k, v]) => [k, interpolate(v, dotenv)]));
}

/** .env.example as a project .env, with the empty required values filled in. */
export function exampleDotenv(): Record<string, string> {
  return { ...Object.fromEntries(readEnvExample().map((e) => [e.name, e.value])), ...EXAMPLE_SECRETS };
}

// ---- .env.example ----

export interface EnvExampleEntry {
  name: string;
  value: string;
  /** The comment lines right above the assignment. */
  comment: string;
}

/** KEY=value lines with the comment block above each, as compose reads a .env file. */
export function readEnvExample(file = repoPath('.env.example')): EnvExampleEntry[] {
  const entries: EnvExampleEntry[] = [];
  let comment: string[] = [];
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '') comment = [];
    else if (line.startsWith('#')) comment.push(line.replace(/^#\s?/, ''));
    else {
      const match = /^([A-Za-z_]\w*)=(.*)$/.exec(line);
      if (!match) throw new Error(`.env.example: not KEY=value: ${line}`);
      entries.push({ name: match[1]!, value: unquote(match[2]!.trim()), comment: comment.join('\n') });
      comment = [];
    }
  }
  return entries;
}

function unquote(value: string): string {
  return /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value;
}
