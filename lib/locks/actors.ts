import { db } from '@/lib/db/client';

/**
 * The names behind the engine's actor locks (prisma/functions/00_helpers.sql, bridge_label): each command takes a
 * shared advisory lock keyed by hashtext(actor), and the Locks page maps the key back to the name through
 * backend_actors. A name is written once per process, before the first command acts for it and outside that
 * command's transaction — so it is there (committed) while that command waits for a lock, even if the command then
 * fails. Two names whose hashes meet are both kept and shown as "a or b".
 */
const known = new Set<string>();

export async function noteActor(name: string): Promise<void> {
  if (known.has(name)) return;
  try {
    // The key as pg_locks shows it: hashtext's int4 read as the unsigned objid.
    await db().$executeRaw`
      INSERT INTO backend_actors (key, name) VALUES (hashtext(${name})::bigint & 4294967295, ${name}) ON CONFLICT DO NOTHING`;
    known.add(name);
  } catch (err) {
    // Naming the user on the Locks page is a courtesy: never a reason for the command itself to fail.
    console.error(`[locks] could not record the acting user ${name}:`, err);
  }
}
