import { can } from '@/lib/auth/permissions';
import type { AuthActor } from '@/lib/auth/types';
import type { ErrorBody } from '@/lib/shared/errors';

/**
 * Query text on the Locks page can carry data: the literals of a statement (an email in a WHERE clause, an amount,
 * a payload). Everyone who may read locks sees the statement's shape; only on-call (who may stop a backend and must
 * judge what it is doing) sees it whole. Literals are string constants (with their E/B/X/N/U& prefixes),
 * dollar-quoted bodies and numbers; each becomes `?`. Text cut short by PostgreSQL's track_activity_query_size may
 * end inside a literal: the rest of it is masked too.
 */
const LITERAL = /\$([A-Za-z_][A-Za-z_0-9]*)?\$[\s\S]*?(?:\$\1\$|$)|[Ee]'(?:[^'\\]|\\[\s\S]|'')*(?:'|$)|(?:[BbXxNn]|[Uu]&)?'(?:[^']|'')*(?:'|$)|(?<![\w$."])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b|(?<![\w$."])\.\d+\b/g;

export function maskSqlLiterals(sql: string): string {
  return sql.replace(LITERAL, '?');
}

/** Every `query` text in a Locks answer, masked unless the actor may cancel backends (on-call). */
export function queriesFor<T>(actor: AuthActor, value: T): T {
  if (can(actor, 'locks.cancel')) return value;
  return maskDeep(value) as T;
}

/**
 * An error answer as `viewer` may see it: a lock refusal (423) names the backends holding the lock, with their query
 * text, which is masked like the Locks page's unless the viewer may see it whole. Nobody known: masked.
 */
export function errorBodyFor(body: ErrorBody, viewer: AuthActor | null | undefined): ErrorBody {
  if (!namesLockHolders(body) || (viewer && can(viewer, 'locks.cancel'))) return body;
  return { ...body, details: maskDeep(body.details) };
}

/** Whether an error answer names lock holders (and so carries their query text). */
export function namesLockHolders(body: ErrorBody): boolean {
  return !!body.details && typeof body.details === 'object' && 'holders' in body.details;
}

function maskDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskDeep);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) out[key] = key === 'query' && typeof v === 'string' ? maskSqlLiterals(v) : maskDeep(v);
    return out;
  }
  return value;
}
