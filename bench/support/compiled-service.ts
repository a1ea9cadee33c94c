// The benchmarks run the service as the image runs it: the compiled bundle (`npm run build`,
// dist/src/main.js) under plain node, with the NODE_OPTIONS the image sets (V8's heap sizes). Under
// tsx the process also holds tsx's compiler, about 60 MB of resident memory that production never
// has (ingest's RSS target is about the service).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { envPairs, instructionsOf, readDockerfile } from '../../test/deploy/deploy-files.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const COMPILED_MAIN = `${ROOT}dist/src/main.js`;

/** Builds dist/ (a few seconds) at the start of a bench run, so the bundle is the code checked out. */
export function buildService(): void {
  const result = spawnSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`npm run build failed (${result.status ?? result.signal}):\n${result.stderr}`);
}

/** NODE_OPTIONS as the Dockerfile's runtime stage sets it, read from the Dockerfile itself so the two cannot drift. */
export function imageNodeOptions(): string {
  const stages = readDockerfile();
  const env = instructionsOf(stages, stages.at(-1)!).filter((i) => i.keyword === 'ENV');
  return env.map((i) => envPairs(i.args).get('NODE_OPTIONS')).findLast((value) => value !== undefined) ?? '';
}
