import DataLoader from 'dataloader';
import { db, queryOnPool } from '@/lib/db/client';
import type { Fencing } from '@/lib/leases/schemas';
import {
  finishRuns,
  finishSteps,
  onClient,
  recordOpenedRuns,
  startRuns,
  startSteps,
  type ClosedRun,
  type Exec,
  type PendingRun,
  type RunEnd,
  type RunStart,
  type StartedRun,
  type StartedStep,
  type StepEnd,
  type StepStart,
} from './repository';

/**
 * How a run's records reach the database. An operator's run writes each record as its own statement through
 * Prisma (its start may carry a lease's fence, which must be checked alone). Workers' runs share one writer per
 * process: the records of every run in flight are gathered and written together, one statement per kind of record
 * (DataLoader, without its cache), straight on the pool — the per-query cost of Prisma's client would otherwise be
 * paid once per record, as it was before the engine's hot path moved to the pool (lib/db/client.ts, queryOnPool).
 *
 * Each kind has at most one statement in flight; what arrives meanwhile waits and goes in the next one, so the
 * batches grow with the load instead of the statements multiplying (graphile-worker's completion batching, River's
 * batched completer).
 */
export type RunWriter = {
  startRun(item: RunStart): Promise<StartedRun>;
  startStep(item: StepStart): Promise<StartedStep>;
  finishStep(item: StepEnd): Promise<Date | null>;
  finishRun(item: RunEnd): Promise<ClosedRun | null>;
  /**
   * The run's end with its last step's end when nothing is written between them: a writer may send both in one
   * statement (a worker's writer also ends the claim in it, lib/workers/worker.ts), and record in it a run its claim
   * opened (`opening`) whole. Null: the claim is lost.
   */
  closeRun(item: RunClose): Promise<ClosedRun | null>;
  /** Records a run a worker's claim opened (PendingRun), before the run's first other write; its first step's id, or null: the claim is lost. */
  recordOpened(item: PendingRun): Promise<string | null>;
};

/** A run's end, carrying its last step's end when the run closes right after it, and the run itself when its claim opened it and nothing recorded it yet. */
export type RunClose = RunEnd & { stepEnd: StepEnd | null; opening?: PendingRun };

const finishRunOne = async (exec: Exec, item: RunEnd) => (await finishRuns(exec, [item]))[0];

/** The run's record when it has none yet, the step's end, then the run's: statements of their own, for a writer that has no statement doing all. */
export const closeInTwo =
  (writer: Pick<RunWriter, 'finishStep' | 'finishRun' | 'recordOpened'>) =>
  async ({ stepEnd, opening, ...runEnd }: RunClose): Promise<ClosedRun | null> => {
    if (opening) {
      const stepId = await writer.recordOpened(opening);
      if (stepId === null) return null;
      if (stepEnd) stepEnd = { ...stepEnd, stepId };
    }
    if (stepEnd && !(await writer.finishStep(stepEnd))) return null;
    return writer.finishRun(runEnd);
  };

export function directWriter(fencing: Fencing | null): RunWriter {
  const exec = () => onClient(db());
  const ends = {
    finishStep: async (item: StepEnd) => (await finishSteps(exec(), [item]))[0],
    finishRun: (item: RunEnd) => finishRunOne(exec(), item),
    recordOpened: async (item: PendingRun) => (await recordOpenedRuns(exec(), [item]))[0],
  };
  return {
    startRun: async (item) => (await startRuns(exec(), [item], fencing))[0],
    startStep: async (item) => (await startSteps(exec(), [item]))[0],
    ...ends,
    closeRun: closeInTwo(ends),
  };
}

/** The largest batch one statement carries. */
const MAX_BATCH = 100;

/**
 * A DataLoader over one batched statement: a batch is dispatched once the kind's previous statement has returned,
 * gathering everything asked for meanwhile.
 */
export function batchLoader<K, V>(write: (items: readonly K[]) => Promise<V[]>): DataLoader<K, V> {
  let previous: Promise<unknown> = Promise.resolve();
  return new DataLoader<K, V>(
    // DataLoader itself rejects every item of a batch whose statement answered a different number of rows.
    (items) => {
      const written = write(items);
      previous = written.catch(() => undefined);
      return written;
    },
    { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (dispatch) => void previous.then(() => setImmediate(dispatch)) },
  );
}

const globalForWriter = globalThis as unknown as { bridgeBatchedWriter?: RunWriter };

export function batchedWriter(): RunWriter {
  if (!globalForWriter.bridgeBatchedWriter) {
    const exec: Exec = queryOnPool;
    const runs = batchLoader((items: readonly RunStart[]) => startRuns(exec, items));
    const steps = batchLoader((items: readonly StepStart[]) => startSteps(exec, items));
    const stepEnds = batchLoader((items: readonly StepEnd[]) => finishSteps(exec, items));
    const runEnds = batchLoader((items: readonly RunEnd[]) => finishRuns(exec, items));
    const openings = batchLoader((items: readonly PendingRun[]) => recordOpenedRuns(exec, items));
    const ends = { finishStep: (item: StepEnd) => stepEnds.load(item), finishRun: (item: RunEnd) => runEnds.load(item), recordOpened: (item: PendingRun) => openings.load(item) };
    globalForWriter.bridgeBatchedWriter = {
      startRun: (item) => runs.load(item),
      startStep: (item) => steps.load(item),
      ...ends,
      closeRun: closeInTwo(ends),
    };
  }
  return globalForWriter.bridgeBatchedWriter;
}
