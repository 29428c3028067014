/**
 * How many test files run at once, each worker against its own database: TEST_WORKERS, default 2 (the machines this
 * runs on have two cores; the files spend much of their time waiting on PostgreSQL, so two keep both busy).
 */
export function testWorkers(): number {
  const n = Number(process.env.TEST_WORKERS ?? 2);
  return Number.isInteger(n) && n >= 1 && n <= 8 ? n : 2;
}
