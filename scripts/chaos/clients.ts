import { randomUUID } from 'node:crypto';
import { INTENT_STATUSES, TRANSITIONS, type IntentStatus } from '@/lib/shared/intent-states';
import { call, DOCUMENTED_5XX, errorCode, type Answer, type Instance } from './api';

/**
 * K clients issuing random commands through every instance at once, aimed at a small set of hot intents so they
 * contend: status changes (mostly allowed moves, some refused), corrections (some against a stale version),
 * idempotency keys sent to both instances at the same moment, sorted bulk updates, pipeline runs (racing the
 * workers for the same intents), lease holders whose status changes and corrections carry their fencing token (some
 * pausing past their lease, so a successor holds it when their late write arrives), creations and reads. Each 2xx
 * is an acknowledgement the database must still show at the end; each answer is counted by operation and status.
 *
 * With `readYourWrites` (a run with a read replica), every acknowledged command is followed by the client's read of
 * the intent it changed, through any instance, echoing the command's `Bridge-Commit-Lsn` as `Bridge-Read-After` as
 * a client of several instances does: the read must show the change (the acknowledged version or a later one, the
 * created intent), whether a replica or the primary serves it.
 *
 * Workers take every RECEIVED intent through the pipeline to COMPLETED, which is terminal: a hot intent found
 * COMPLETED is replaced by a new one, so the clients keep contending on intents they can still move.
 */
export type Fenced = { resource: string; token: number };
export type Ack =
  | { kind: 'status'; intentId: string; version: number; status: string; fencing?: Fenced }
  | { kind: 'correction'; intentId: string; version: number; correctionId: string; fencing?: Fenced }
  | { kind: 'created'; intentId: string }
  | { kind: 'pipeline'; intentId: string; runId: string; status: string };

export type ClientStats = {
  operations: Record<string, Record<string, number>>;
  acks: Ack[];
  problems: string[];
  /** The read-your-writes probe: reads after a command by where they were served, and those that got no answer to judge. */
  readYourWrites: { checked: number; bySource: Record<string, number>; unanswered: number; withoutPosition: number };
};

type Known = { id: string; status: IntentStatus; version: number };

type IntentView = { id: string; status: IntentStatus; version: number };

/** JSON with keys in one order: a replayed answer comes back from jsonb, which keeps its own key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];
const chance = (p: number) => Math.random() < p;

/** Lease resources the clients fence their writes with: few, so holders follow each other closely. */
const LEASES = ['chaos-lease-a', 'chaos-lease-b', 'chaos-lease-c'];

export class ChaosClients {
  readonly stats: ClientStats = { operations: {}, acks: [], problems: [], readYourWrites: { checked: 0, bySource: {}, unanswered: 0, withoutPosition: 0 } };
  private readonly known = new Map<string, Known>();
  private readonly hot = new Set<string>();
  private hotSize = 0;
  /** The highest token of each lease resource whose grant has been answered (a write sent later must not win with a lower one). */
  private readonly granted = new Map<string, number>();
  private stopped = false;

  constructor(
    private readonly instances: Instance[],
    private readonly token: string,
    private readonly options: { readYourWrites?: boolean } = {},
  ) {}

  async seed(count: number): Promise<void> {
    this.hotSize = count;
    for (let i = 0; i < count; i++) await this.create();
  }

  hotIds(): string[] {
    return [...this.hot];
  }

  /** Runs `clients` loops until stop(). */
  async run(clients: number): Promise<void> {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (!this.stopped) await this.step();
      }),
    );
  }

  stop(): void {
    this.stopped = true;
  }

  private instance(): Instance {
    const up = this.instances.filter((i) => i.up);
    return pick(up.length ? up : this.instances);
  }

  private record(operation: string, answer: Answer): void {
    this.learnFromRefusal(answer);
    const key = String(answer.status);
    const counts = (this.stats.operations[operation] ??= {});
    counts[key] = (counts[key] ?? 0) + 1;
    if (typeof answer.status === 'number' && answer.status >= 500) {
      const code = errorCode(answer);
      if (!code || !DOCUMENTED_5XX.has(code)) {
        this.stats.problems.push(`${operation} answered ${answer.status} ${code ?? ''}: ${JSON.stringify(answer.body).slice(0, 300)}`);
      }
    }
  }

  private learn(view: IntentView | undefined): void {
    if (!view?.id) return;
    const current = this.known.get(view.id);
    if (!current || view.version >= current.version) this.known.set(view.id, { id: view.id, status: view.status, version: view.version });
  }

  /**
   * A refusal says where the intent is now: an invalid transition names its status, a version conflict its
   * version. The workers move intents on all the time; without this the clients would keep aiming at the past.
   */
  private learnFromRefusal(answer: Answer): void {
    if (answer.status !== 409) return;
    const details = (answer.body as { error?: { details?: { intentId?: string; from?: IntentStatus; currentVersion?: number } } } | null)?.error?.details;
    const current = details?.intentId ? this.known.get(details.intentId) : undefined;
    if (!current || !details) return;
    if (errorCode(answer) === 'invalid_transition' && details.from) current.status = details.from;
    if (errorCode(answer) === 'version_conflict' && typeof details.currentVersion === 'number') current.version = Math.max(current.version, details.currentVersion);
  }

  /** A hot intent to work on; one known to be COMPLETED (terminal) is replaced by a new one first. */
  private async pickHot(): Promise<Known | undefined> {
    const id = pick(this.hotIds());
    const known = this.known.get(id);
    if (known?.status !== 'COMPLETED' || this.hot.size <= 2) return known;
    this.hot.delete(id);
    const created = await this.create();
    return created ? this.known.get(created) : undefined;
  }

  private async step(): Promise<void> {
    const roll = Math.random();
    if (roll < 0.34) return this.statusChange();
    if (roll < 0.6) return this.correction();
    if (roll < 0.68) return this.bulk();
    if (roll < 0.74) return this.pipeline();
    if (roll < 0.82) return this.leaseHolder();
    if (roll < 0.86) {
      await this.create();
      return;
    }
    return this.read();
  }

  private target(known: Known | undefined): IntentStatus {
    const allowed = known ? TRANSITIONS[known.status] : [];
    return allowed.length && chance(0.85) ? pick(allowed) : pick(INTENT_STATUSES);
  }

  private async create(): Promise<string | null> {
    const answer = await call(this.instance(), this.token, 'POST', '/api/intents', {
      payload: { order: `C-${randomUUID().slice(0, 8)}`, amount: Math.round(Math.random() * 100_000) / 100, city: pick(['Osaka', 'Lyon', 'Quito']) },
      source: 'chaos',
    });
    this.record('create', answer);
    if (answer.status !== 201) return null;
    const intent = answer.body as IntentView;
    this.learn(intent);
    this.stats.acks.push({ kind: 'created', intentId: intent.id });
    if (this.hot.size < this.hotSize) this.hot.add(intent.id);
    await this.readOwnWrite(answer, intent.id, null);
    return intent.id;
  }

  private async read(): Promise<void> {
    const id = pick(this.hotIds());
    const answer = await call(this.instance(), this.token, 'GET', `/api/intents/${id}`);
    this.record('read', answer);
    if (answer.status === 200) this.learn(answer.body as IntentView);
  }

  /**
   * The read-your-writes probe: the client's next read after `answer` acknowledged `version` of `intentId` (null: it
   * created it) must show it. Through any instance, with the command's position echoed as a multi-instance client
   * does; a read that gets no 200 (an instance killed, a lock timeout) is counted, not judged — except a 404 for an
   * intent whose creation was acknowledged.
   */
  private async readOwnWrite(answer: Answer, intentId: string, version: number | null): Promise<void> {
    if (!this.options.readYourWrites || answer.status === 'unreachable') return;
    const probe = this.stats.readYourWrites;
    const lsn = answer.headers.get('bridge-commit-lsn');
    if (!lsn) probe.withoutPosition++;
    const instance = this.instance();
    const read = await call(instance, this.token, 'GET', `/api/intents/${intentId}`, undefined, lsn ? { 'Bridge-Read-After': lsn } : {});
    this.record('read own write', read);
    if (read.status === 'unreachable') return void probe.unanswered++;
    const source = read.headers.get('bridge-read-source') ?? 'unnamed';
    const where = `${instance.name} (${source}, Bridge-Read-After ${lsn ?? 'none'})`;
    if (read.status === 404 && version === null) {
      this.stats.problems.push(`read-your-writes: ${where} answered 404 for intent ${intentId}, whose creation was acknowledged`);
      return;
    }
    if (read.status !== 200) return void probe.unanswered++;
    probe.checked++;
    probe.bySource[source] = (probe.bySource[source] ?? 0) + 1;
    const seen = read.body as IntentView;
    this.learn(seen);
    if (version !== null && seen.version < version) {
      this.stats.problems.push(`read-your-writes: ${where} showed version ${seen.version} of intent ${intentId} after the command acknowledged version ${version}`);
    }
  }

  /** Sends `body` once, or — for a keyed request — to two instances at the same moment, which must agree. */
  private async send(operation: string, path: string, body: Record<string, unknown>, keyed: boolean): Promise<Answer[]> {
    if (!keyed) {
      const answer = await call(this.instance(), this.token, 'POST', path, body);
      this.record(operation, answer);
      return [answer];
    }
    const withKey = { ...body, idempotencyKey: `chaos-${randomUUID()}` };
    const targets = this.instances.filter((i) => i.up);
    const answers = await Promise.all((targets.length >= 2 ? targets.slice(0, 2) : [this.instance(), this.instance()]).map((i) => call(i, this.token, 'POST', path, withKey)));
    for (const a of answers) this.record(`${operation} (keyed)`, a);
    // Transient refusals (lock timeout, exhausted tries) free the key, so only settled answers must be the same.
    const settled = answers.flatMap((a) =>
      typeof a.status === 'number' && a.status !== 423 && a.status < 500 && errorCode(a) !== 'idempotency_in_progress' ? [{ status: a.status, body: canonical(a.body) }] : [],
    );
    if (settled.length === 2 && (settled[0].status !== settled[1].status || settled[0].body !== settled[1].body)) {
      this.stats.problems.push(`${operation}: one idempotency key, two answers: ${JSON.stringify(settled).slice(0, 400)}`);
    }
    return answers;
  }

  private async statusChange(): Promise<void> {
    const known = await this.pickHot();
    if (!known) return;
    const status = this.target(known);
    const body: Record<string, unknown> = { status };
    // Some callers say which version they saw; some of those saw an older one.
    if (chance(0.25)) body.expectedVersion = chance(0.5) ? known.version : Math.max(0, known.version - 1);
    const answers = await this.send('status', `/api/intents/${known.id}/status`, body, chance(0.15));
    for (const a of answers) {
      if (a.status !== 200) continue;
      const { intent } = a.body as { intent: IntentView };
      this.learn(intent);
      this.stats.acks.push({ kind: 'status', intentId: intent.id, version: intent.version, status: intent.status });
      await this.readOwnWrite(a, intent.id, intent.version);
    }
  }

  private correctionBody(): Record<string, unknown> {
    return {
      // A small space of diffs, so the same correction is sometimes sent twice and must be "already applied".
      diff: chance(0.5) ? { amount: Math.floor(Math.random() * 20) } : { review: { score: Math.floor(Math.random() * 5), by: 'chaos' } },
      source: 'chaos',
      reason: 'chaos re-evaluation',
    };
  }

  private async correction(): Promise<void> {
    const known = await this.pickHot();
    if (!known) return;
    const body = this.correctionBody();
    if (chance(0.25)) body.expectedVersion = chance(0.5) ? known.version : Math.max(0, known.version - 1);
    const answers = await this.send('correction', `/api/intents/${known.id}/reeval`, body, chance(0.15));
    for (const a of answers) {
      if (a.status !== 200) continue;
      const r = a.body as { intentId: string; status: IntentStatus; version: number; correctionId: string };
      this.learn({ id: r.intentId, status: r.status, version: r.version });
      this.stats.acks.push({ kind: 'correction', intentId: r.intentId, version: r.version, correctionId: r.correctionId });
      await this.readOwnWrite(a, r.intentId, r.version);
    }
  }

  /** The BridgeSet through the API, on an intent the workers may be running at the same moment (then 423). */
  private async pipeline(): Promise<void> {
    const known = await this.pickHot();
    if (!known) return;
    const [answer] = await this.send('pipeline', `/api/intents/${known.id}/pipeline`, { mode: chance(0.5) ? 'FAILFAST' : 'CONTINUE' }, false);
    if (answer.status !== 200) return;
    const { intent, run } = answer.body as { intent: IntentView; run: { id: string; status: string } };
    this.learn(intent);
    this.stats.acks.push({ kind: 'pipeline', intentId: intent.id, runId: run.id, status: run.status });
    await this.readOwnWrite(answer, intent.id, intent.version);
  }

  /**
   * A lease holder: acquires one of a few leases with a short time to live, makes a few status changes and
   * corrections carrying its fencing token — sometimes pausing past its lease first, so that by the time its write
   * arrives another client may hold the lease —, then releases it (refused when it lost it meanwhile).
   */
  private async leaseHolder(): Promise<void> {
    const resource = pick(LEASES);
    const owner = `chaos-${randomUUID().slice(0, 8)}`;
    const ttlMs = 300 + Math.floor(Math.random() * 900);
    const acquired = await call(this.instance(), this.token, 'POST', `/api/leases/${resource}/acquire`, { owner, ttlMs });
    this.record('lease acquire', acquired);
    if (acquired.status !== 200) return;
    const token = (acquired.body as { token: number }).token;
    this.granted.set(resource, Math.max(this.granted.get(resource) ?? 0, token));
    const fencing = { resource, token };
    for (let writes = 1 + Math.floor(Math.random() * 3); writes > 0 && !this.stopped; writes--) {
      if (chance(0.3)) await new Promise((r) => setTimeout(r, Math.random() * 2 * ttlMs));
      const known = await this.pickHot();
      if (!known) continue;
      // A higher token already granted before this write leaves: the write must be refused.
      const supersededBefore = (this.granted.get(resource) ?? 0) > token;
      if (chance(0.5)) {
        const [a] = await this.send('fenced status', `/api/intents/${known.id}/status`, { status: this.target(known), fencing }, false);
        if (a.status !== 200) continue;
        const { intent, alreadyApplied } = a.body as { intent: IntentView; alreadyApplied: boolean };
        this.learn(intent);
        if (alreadyApplied) continue;
        if (supersededBefore) this.stats.problems.push(`fenced status change of ${intent.id} with token ${token} of ${resource} was applied after a higher token had been granted`);
        this.stats.acks.push({ kind: 'status', intentId: intent.id, version: intent.version, status: intent.status, fencing });
        await this.readOwnWrite(a, intent.id, intent.version);
      } else {
        const [a] = await this.send('fenced correction', `/api/intents/${known.id}/reeval`, { ...this.correctionBody(), fencing }, false);
        if (a.status !== 200) continue;
        const r = a.body as { intentId: string; status: IntentStatus; version: number; correctionId: string; alreadyApplied: boolean };
        this.learn({ id: r.intentId, status: r.status, version: r.version });
        if (r.alreadyApplied) continue;
        if (supersededBefore) this.stats.problems.push(`fenced correction of ${r.intentId} with token ${token} of ${resource} was applied after a higher token had been granted`);
        this.stats.acks.push({ kind: 'correction', intentId: r.intentId, version: r.version, correctionId: r.correctionId, fencing });
        await this.readOwnWrite(a, r.intentId, r.version);
      }
    }
    this.record('lease release', await call(this.instance(), this.token, 'POST', `/api/leases/${resource}/release`, { owner, token }));
  }

  private async bulk(): Promise<void> {
    const ids = [...new Set(Array.from({ length: 2 + Math.floor(Math.random() * 3) }, () => pick(this.hotIds())))];
    const status = this.target(this.known.get(ids[0]));
    const [answer] = await this.send('bulk', '/api/intents/bulk-status', { ids, status }, false);
    if (answer.status !== 200) return;
    const changed = (answer.body as { intents: IntentView[] }).intents;
    for (const intent of changed) {
      this.learn(intent);
      this.stats.acks.push({ kind: 'status', intentId: intent.id, version: intent.version, status: intent.status });
    }
    if (changed.length) {
      const one = pick(changed);
      await this.readOwnWrite(answer, one.id, one.version);
    }
  }
}
