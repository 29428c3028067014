import { randomUUID } from 'node:crypto';
import { INTENT_STATUSES, TRANSITIONS, type IntentStatus } from '../../lib/intents/state-machine';
import { call, DOCUMENTED_5XX, errorCode, type Answer, type Instance } from './api';

/**
 * K clients issuing random commands through every instance at once, aimed at a small set of hot intents so they
 * contend: status changes (mostly allowed moves, some refused), corrections (some against a stale version),
 * idempotency keys sent to both instances at the same moment, sorted bulk updates, creations and reads. Each 2xx is
 * an acknowledgement the database must still show at the end; each answer is counted by operation and status.
 */
export type Ack =
  | { kind: 'status'; intentId: string; version: number; status: string }
  | { kind: 'correction'; intentId: string; version: number; correctionId: string }
  | { kind: 'created'; intentId: string };

export type ClientStats = {
  operations: Record<string, Record<string, number>>;
  acks: Ack[];
  problems: string[];
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

export class ChaosClients {
  readonly stats: ClientStats = { operations: {}, acks: [], problems: [] };
  private readonly known = new Map<string, Known>();
  private stopped = false;

  constructor(
    private readonly instances: Instance[],
    private readonly token: string,
  ) {}

  async seed(count: number): Promise<void> {
    for (let i = 0; i < count; i++) await this.create();
  }

  hotIds(): string[] {
    return [...this.known.keys()];
  }

  /** Runs `clients` loops until `deadline` (ms since epoch) or stop(). */
  async run(clients: number, deadline: number): Promise<void> {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (!this.stopped && Date.now() < deadline) await this.step();
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

  private async step(): Promise<void> {
    const roll = Math.random();
    if (roll < 0.4) return this.statusChange();
    if (roll < 0.7) return this.correction();
    if (roll < 0.8) return this.bulk();
    if (roll < 0.85) return this.create();
    return this.read();
  }

  private target(known: Known | undefined): IntentStatus {
    const allowed = known ? TRANSITIONS[known.status] : [];
    return allowed.length && chance(0.85) ? pick(allowed) : pick(INTENT_STATUSES);
  }

  private async create(): Promise<void> {
    const answer = await call(this.instance(), this.token, 'POST', '/api/intents', {
      payload: { order: `C-${randomUUID().slice(0, 8)}`, amount: Math.round(Math.random() * 100_000) / 100, city: pick(['Osaka', 'Lyon', 'Quito']) },
      source: 'chaos',
    });
    this.record('create', answer);
    if (answer.status === 201) {
      const intent = answer.body as IntentView;
      this.learn(intent);
      this.stats.acks.push({ kind: 'created', intentId: intent.id });
    }
  }

  private async read(): Promise<void> {
    const id = pick(this.hotIds());
    const answer = await call(this.instance(), this.token, 'GET', `/api/intents/${id}`);
    this.record('read', answer);
    if (answer.status === 200) this.learn(answer.body as IntentView);
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
    const known = this.known.get(pick(this.hotIds()));
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
    }
  }

  private async correction(): Promise<void> {
    const known = this.known.get(pick(this.hotIds()));
    if (!known) return;
    const body: Record<string, unknown> = {
      // A small space of diffs, so the same correction is sometimes sent twice and must be "already applied".
      diff: chance(0.5) ? { amount: Math.floor(Math.random() * 20) } : { review: { score: Math.floor(Math.random() * 5), by: 'chaos' } },
      source: 'chaos',
      reason: 'chaos re-evaluation',
    };
    if (chance(0.25)) body.expectedVersion = chance(0.5) ? known.version : Math.max(0, known.version - 1);
    const answers = await this.send('correction', `/api/intents/${known.id}/reeval`, body, chance(0.15));
    for (const a of answers) {
      if (a.status !== 200) continue;
      const r = a.body as { intentId: string; status: IntentStatus; version: number; correctionId: string };
      this.learn({ id: r.intentId, status: r.status, version: r.version });
      this.stats.acks.push({ kind: 'correction', intentId: r.intentId, version: r.version, correctionId: r.correctionId });
    }
  }

  private async bulk(): Promise<void> {
    const ids = [...new Set(Array.from({ length: 2 + Math.floor(Math.random() * 3) }, () => pick(this.hotIds())))];
    const status = this.target(this.known.get(ids[0]));
    const [answer] = await this.send('bulk', '/api/intents/bulk-status', { ids, status }, false);
    if (answer.status !== 200) return;
    for (const intent of (answer.body as { intents: IntentView[] }).intents) {
      this.learn(intent);
      this.stats.acks.push({ kind: 'status', intentId: intent.id, version: intent.version, status: intent.status });
    }
  }
}
