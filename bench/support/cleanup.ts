// Everything a bench run creates (child processes, databases) registers its undo here. Undos run
// newest first: by the part that created them when it ends, or all at once on an error, on
// Ctrl-C or SIGTERM, so no child outlives the run and no bench database is left behind.
type Undo = () => Promise<void>;

const pending = new Map<number, { label: string; undo: Undo }>();
let nextId = 0;

/** Registers an undo; the returned function runs it once (later calls and cleanupAll skip it). */
export function onCleanup(label: string, undo: Undo): () => Promise<void> {
  const id = nextId++;
  pending.set(id, { label, undo });
  return async () => {
    const entry = pending.get(id);
    if (!entry) return;
    pending.delete(id);
    await entry.undo();
  };
}

/** Runs every undo not yet run, newest first; reports failures on stderr and carries on. */
export async function cleanupAll(): Promise<void> {
  const entries = [...pending.entries()].sort(([a], [b]) => b - a);
  for (const [id, { label, undo }] of entries) {
    pending.delete(id);
    try {
      await undo();
    } catch (error) {
      process.stderr.write(`bench: cleaning up ${label} failed: ${(error as Error).message}\n`);
    }
  }
}

/** On SIGINT/SIGTERM: undo everything, then exit 130/143. A second signal exits at once. */
export function installSignalCleanup(): void {
  let stopping = false;
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.on(signal, () => {
      if (stopping) process.exit(code);
      stopping = true;
      process.stderr.write(`\nbench: ${signal}, stopping children and dropping databases\n`);
      void cleanupAll().finally(() => process.exit(code));
    });
  }
}
