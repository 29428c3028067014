/**
 * Next's start-up hook. The housekeeping uses Node's process API, so it lives in a module imported only under the
 * Node runtime (Next drops this branch from any Edge bundle, and with it the warnings about process.once/exit).
 */
export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { startHousekeeping } = await import('./lib/housekeeping');
    startHousekeeping();
  }
}
