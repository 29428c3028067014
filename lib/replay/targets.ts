import { z } from 'zod';
import { ValidationError } from '@/lib/shared/errors';

/**
 * The thresholds a replay run is judged against: the documented targets ("ours", docs/REPLAY.md) by default. They are configuration, so a team
 * can tighten them or relax one while it investigates: `REPLAY_TARGETS` (a JSON object of overrides) for every
 * door, `--targets <file.json>` for the CLI. Every run records the targets it was judged against.
 */
export const targetsSchema = z
  .object({
    /** Status updates, 1,000 intents 100 at a time: at least this many per second… */
    throughputMinPerSec: z.number().positive().default(2000),
    /** …and at least this share of the raw-SQL baseline's throughput in the same run. */
    baselineMinRatio: z.number().positive().max(10).default(0.8),
    /** Uncontended lock (take and release a row lock), p95. */
    lockAcquisitionP95MaxMs: z.number().positive().default(5),
    /** 50 concurrent corrections of one intent, p95 of each correction's latency. */
    corrections50P95MaxMs: z.number().positive().default(150),
    /** Crossing-order deadlock: from the deadlock forming to the victim's retry committing, mean over rounds. */
    deadlockRecoveryMeanMaxMs: z.number().positive().default(300),
    /** Two concurrent NOWAIT executions: the loser must fail within this long (it must not wait for the winner). */
    nowaitFailFastMaxMs: z.number().positive().default(100),
    /** Comparison with the previous run: a measure this much worse (0.2 = 20 %) is flagged as a regression. */
    regressionTolerance: z.number().min(0).max(10).default(0.2),
  })
  .strict();

export type Targets = z.infer<typeof targetsSchema>;
export type TargetOverrides = z.input<typeof targetsSchema>;

export const DEFAULT_TARGETS: Targets = targetsSchema.parse({});

/** Overrides from REPLAY_TARGETS (JSON text), then explicit ones (CLI file), over the defaults. */
export function resolveTargets(envJson: string | undefined, overrides: unknown = {}): Targets {
  let fromEnv: unknown = {};
  if (envJson && envJson.trim()) {
    try {
      fromEnv = JSON.parse(envJson);
    } catch {
      throw new ValidationError([{ field: 'REPLAY_TARGETS', message: 'is not valid JSON' }]);
    }
  }
  const merged = { ...asObject(fromEnv, 'REPLAY_TARGETS'), ...asObject(overrides, 'targets') };
  const parsed = targetsSchema.safeParse(merged);
  if (!parsed.success) {
    throw new ValidationError(parsed.error.issues.map((i) => ({ field: ['targets', ...i.path].join('.'), message: i.message })));
  }
  return parsed.data;
}

function asObject(value: unknown, field: string): Record<string, unknown> {
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new ValidationError([{ field, message: 'must be a JSON object' }]);
  return value as Record<string, unknown>;
}
