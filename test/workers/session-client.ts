import { Prisma } from '@/generated/prisma/client';
import type { Tx } from '@/lib/db/client';
import type { Session } from '../barriers';

/**
 * Runs the workers' named statements on a plain session instead of the pool, so a test can hold that session's
 * transaction open between statements (BEGIN … statement … COMMIT at the points it chooses), as Postgres' own
 * isolation tests do. Only $queryRaw and $executeRaw are offered (as a tagged template or with a Prisma.Sql): that
 * is all the statements use.
 */
export function onSession(session: Session): Tx {
  const run = async (first: TemplateStringsArray | Prisma.Sql, values: unknown[]) => {
    const query = first instanceof Prisma.Sql ? first : Prisma.sql(first, ...values);
    return session.query(query.text, query.values as unknown[]);
  };
  return {
    $queryRaw: async (first: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => (await run(first, values)).rows,
    $executeRaw: async (first: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => (await run(first, values)).rowCount ?? 0,
  } as unknown as Tx;
}
