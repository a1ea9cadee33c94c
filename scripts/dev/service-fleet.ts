// Several service processes on one database, as a deploy runs them, for what needs real
// processes coming and going: `npm run chaos`, and tests of kills, restarts and rolling stops.
// Kills one at random (never the last one alive), restarts whatever ends until told to stop,
// and stops them all with SIGTERM at the end, recording every exit that was not the expected one:
// a SIGTERM must end in exit 0 (docs/design.md, invariant 10), and no process may end unasked.
//
// Defaults: three tries per start, a second apart; stopTimeoutMs 15 s for everyone to exit after
// the final SIGTERM (above SHUTDOWN_TIMEOUT_SECONDS), after which a process is SIGKILLed.
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnService, type ChildService } from './spawn-service.js';

export type KillSignal = 'SIGKILL' | 'SIGTERM';

export interface FleetMember {
  readonly child: ChildService;
  /** When its start line was read (ms since epoch). */
  readonly upAt: number;
  /** The signal this fleet sent it, if any, and when. */
  signal?: KillSignal;
  signalledAt?: number;
  /** Exit code or signal name, once it has ended. */
  exit?: number | string;
}

export interface FleetOptions {
  /** The children's environment, on top of this process's (see spawnService). */
  env: Record<string, string>;
  stopTimeoutMs?: number;
  /** One line per start, kill and exit. */
  log?: (line: string) => void;
  /** Which log lines each child keeps in memory (spawnService's keepLog). */
  keepLog?: (entry: Record<string, unknown>) => boolean;
}

const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(Math.random() * items.length)];

export class ServiceFleet {
  readonly members: FleetMember[] = [];
  readonly kills: Record<KillSignal, number> = { SIGKILL: 0, SIGTERM: 0 };
  /** Processes that exited other than 0 after a SIGTERM (a SIGKILL after stopTimeoutMs included). */
  readonly sigtermNotZero: FleetMember[] = [];
  /** Processes that exited unasked: a crash. */
  readonly unexpectedExits: FleetMember[] = [];
  lastKillAt: number | undefined;
  lastStartError = '';
  private readonly starting = new Set<Promise<void>>();
  private readonly aborted = new AbortController();
  private stopping = false;

  constructor(private readonly options: FleetOptions) {}

  /** Up, and not signalled: where traffic may go. */
  live(): FleetMember[] {
    return this.members.filter((m) => m.signal === undefined && m.exit === undefined);
  }

  /** Starts one more process in the background; `started()` waits for it. */
  start(): void {
    const starting = (async () => {
      for (let attempt = 1; attempt <= 3 && !this.stopping; attempt++) {
        try {
          const child = await spawnService(this.options.env, {
            signal: this.aborted.signal,
            ...(this.options.keepLog && { keepLog: this.options.keepLog }),
          });
          const member: FleetMember = { child, upAt: Date.now() };
          this.members.push(member);
          void child.exited.then((code) => this.onExit(member, code));
          this.options.log?.(`pid ${child.process.pid} up`);
          return;
        } catch (error) {
          this.lastStartError = error instanceof Error ? error.message : String(error);
          await sleep(1_000);
        }
      }
    })();
    this.starting.add(starting);
    void starting.finally(() => this.starting.delete(starting));
  }

  /** Waits for every start in progress. */
  async started(): Promise<void> {
    await Promise.all(this.starting);
  }

  /**
   * Sends SIGKILL or SIGTERM (as many of each over a run, in random order) to a random live
   * process, unless it is the last one. Returns the signal sent, if any.
   */
  killOne(): KillSignal | undefined {
    const live = this.live();
    if (live.length < 2) return undefined;
    const member = pick(live)!;
    const { SIGKILL, SIGTERM } = this.kills;
    const signal = SIGKILL === SIGTERM ? pick(['SIGKILL', 'SIGTERM'] as const)! : SIGKILL > SIGTERM ? 'SIGTERM' : 'SIGKILL';
    this.signal(member, signal);
    this.kills[signal]++;
    this.lastKillAt = member.signalledAt;
    this.options.log?.(`${signal} to pid ${member.child.process.pid}`);
    return signal;
  }

  private signal(member: FleetMember, signal: KillSignal): void {
    member.signal = signal;
    member.signalledAt = Date.now();
    member.child.process.kill(signal);
  }

  private onExit(member: FleetMember, code: number | string): void {
    member.exit = code;
    if (member.signal === undefined) this.unexpectedExits.push(member);
    if (member.signal === 'SIGTERM' && code !== 0) this.sigtermNotZero.push(member);
    if (this.stopping) return;
    this.options.log?.(`pid ${member.child.process.pid} exited ${code}; restarting`);
    this.start();
  }

  /** No more restarts; SIGTERM to every live process, and waits for every process to end. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    await this.started();
    for (const member of this.live()) this.signal(member, 'SIGTERM');
    const deadline = Date.now() + (this.options.stopTimeoutMs ?? 15_000);
    for (const { child } of this.members) {
      const late = await Promise.race([child.exited.then(() => false), sleep(Math.max(0, deadline - Date.now()), true, { ref: false })]);
      if (late) child.process.kill('SIGKILL');
    }
    await Promise.all(this.members.map((m) => m.child.exited));
  }

  /** Ctrl-C and errors: no restarts, no grace; starts in progress are abandoned. */
  async killAll(): Promise<void> {
    this.stopping = true;
    this.aborted.abort();
    for (const member of this.members) if (member.exit === undefined) member.child.process.kill('SIGKILL');
    await this.started();
    await Promise.all(this.members.map((m) => m.child.exited));
  }
}
