/**
 * The one way a test waits: for a condition it can observe (a row written, a backend waiting on a lock, a process
 * gone), never for an amount of time. `eventually` re-checks the condition until it holds and hands back what the
 * check returned; the timeout is only the point where the test gives up and says what it was waiting for, so a slow
 * machine makes a test slower, never wrong.
 */

export type WaitOptions = {
  /** When to give up (default 60 s): long enough for a busy shared machine, short enough to fail within the test. */
  timeoutMs?: number;
  /** Time between checks (default 5 ms). It is how often the condition is re-read, not an assumption about order. */
  everyMs?: number;
};

/** A check's answer counts as "not yet" when it is undefined, null or false. */
type Pending = undefined | null | false;

/**
 * Resolves with the first answer of `check` that is not undefined, null or false; rejects naming `what` once the
 * timeout passes.
 */
export async function eventually<T>(
  what: string,
  check: () => T | Pending | Promise<T | Pending>,
  options: WaitOptions = {},
): Promise<T> {
  const { timeoutMs = 60_000, everyMs = 5 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await check();
    if (answer !== undefined && answer !== null && answer !== false) return answer;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
