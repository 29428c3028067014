import { useMutation, useQueryClient, type QueryKey } from '@tanstack/react-query';
import type { ActionError, ActionResult } from './action-result';

/** What a server action that never answered (offline, server restarting) looks like to the page: an error like any other. */
export function networkError(err: unknown): ActionError {
  return { code: 'network', message: err instanceof Error ? err.message : String(err) };
}

/**
 * A server action run as a TanStack mutation, its three outcomes folded into two callbacks: `onOk` with the data, or
 * `onFailure` with an `ActionError` — the server's refusal, or `network` when no answer came. Once it has answered
 * either way the `invalidate` keys are refreshed, in order, before the mutation stops pending, so a form's button
 * comes back only when the page shows the new state.
 */
export function useActionMutation<V, T>(options: {
  action: (vars: V) => Promise<ActionResult<T>>;
  onOk: (data: T, vars: V) => void;
  onFailure: (error: ActionError, vars: V) => void;
  invalidate: (vars: V) => readonly QueryKey[];
  /** Runs first once the action has answered or failed (before the refresh). */
  onSettled?: () => void;
}) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: options.action,
    onSuccess: (result, vars) => (result.ok ? options.onOk(result.data, vars) : options.onFailure(result.error, vars)),
    onError: (err, vars) => options.onFailure(networkError(err), vars),
    onSettled: async (_result, _error, vars) => {
      options.onSettled?.();
      for (const queryKey of options.invalidate(vars)) await queryClient.invalidateQueries({ queryKey });
    },
  });
}
