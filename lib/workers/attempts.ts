/**
 * How a failed attempt is written on its work row (`last_error`), which the Workers page lists and a rerun by
 * "last error contains" matches: the attempt, the maximum and what went wrong.
 */
export function attemptError(attempt: number, maxAttempts: number, message: string): string {
  return `attempt ${attempt} of ${maxAttempts}: ${message}`;
}
