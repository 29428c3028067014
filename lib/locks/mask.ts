import { can } from '@/lib/auth/permissions';
import type { AuthActor } from '@/lib/auth/types';

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

function maskDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskDeep);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) out[key] = key === 'query' && typeof v === 'string' ? maskSqlLiterals(v) : maskDeep(v);
    return out;
  }
  return value;
}
