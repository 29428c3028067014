/**
 * What Next gives a server action from its request — the cookies, the headers, revalidation and redirects — for tests
 * that call server actions outside Next. Every file that does mocks `next/headers`, `next/cache` and `next/navigation`
 * with these same stand-ins:
 *
 *   vi.mock('next/headers', () => import('../next-request').then((m) => m.nextHeaders));
 *
 * Test files of one worker share their modules, so the actions and lib/auth/server.ts keep whichever stand-in they
 * were first imported with; one set of stand-ins, answering from `request`, serves every file alike.
 */
export const SAME_ORIGIN: Readonly<Record<string, string>> = { 'user-agent': 'vitest', host: 'localhost:3000', origin: 'http://localhost:3000' };

/** The request the next action call sees: the session cookie it carries (none: signed out) and its headers. */
export const request: { cookie: string | undefined; headers: Record<string, string> } = { cookie: undefined, headers: { ...SAME_ORIGIN } };

/** Signed out, from the console's own page (or with `headers`); call before each case and after the file. */
export function resetRequest(headers: Record<string, string> = SAME_ORIGIN): void {
  request.cookie = undefined;
  request.headers = { ...headers };
}

export const nextHeaders = {
  cookies: async () => ({
    get: (name: string) => {
      const pair = request.cookie?.split('; ').find((c) => c.startsWith(`${name}=`));
      return pair ? { name, value: pair.slice(name.length + 1) } : undefined;
    },
    set: () => undefined,
  }),
  headers: async () => new Headers(request.headers),
};

/** Page revalidation needs Next's render context; what the tests check is who may act and what changed, not caches. */
export const nextCache = { revalidatePath: () => undefined, revalidateTag: () => undefined };

/** A redirect ends the action with an error, as Next's own does; this one says where it sends the caller (`to`). */
export const nextNavigation = {
  redirect: (to: string): never => {
    throw Object.assign(new Error('NEXT_REDIRECT'), { to });
  },
};
