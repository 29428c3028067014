import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, type APIRequestContext } from './support/test';
import { root } from '../scripts/next-server';
import { newDataDir, npmStart, runBash, type NpmStart } from './support/npm-start';

/**
 * What a new user meets: `npm start` with its defaults (the embedded database, the demo data, one worker running
 * the pipeline), the API examples of docs/API.md run word for word against it, and Ctrl-C.
 */
test.describe.configure({ mode: 'serial', timeout: 240_000 });

let started: NpmStart;
const dataDir = newDataDir();

test.beforeAll(async () => {
  test.setTimeout(240_000);
  started = await npmStart(dataDir);
});

test.afterAll(async () => {
  await started?.ctrlC();
});

/** Every `sh` block of docs/API.md that calls the API, in order, as one script. */
function documentedApiExamples(): string {
  const page = readFileSync(join(root, 'docs', 'API.md'), 'utf8');
  const blocks = [...page.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).filter((block) => block.includes('localhost:3000/api/'));
  return blocks.join('\n');
}

/**
 * What the page says an answer holds: the `"key":value` pairs of the `# → …` comment after a call (values
 * written `…` are left out). Keyed by the call's position among the script's curl calls, from 1.
 */
function documentedAnswers(script: string): Map<number, string[]> {
  const answers = new Map<number, string[]>();
  let call = 0;
  for (const line of script.split('\n')) {
    call += (line.match(/(^|\$\()curl /g) ?? []).length;
    const comment = /#\s*→\s*(.*)$/.exec(line);
    if (!comment) continue;
    const pairs = [...comment[1].matchAll(/"(\w+)":("[^"]*"|-?\d+(?:\.\d+)?|true|false|null)/g)].map((m) => `"${m[1]}":${m[2]}`).filter((pair) => !pair.includes('…'));
    answers.set(call, [...(answers.get(call) ?? []), ...pairs]);
  }
  return answers;
}

async function getJson<T>(request: APIRequestContext, path: string): Promise<T> {
  const res = await request.get(`${started.url}${path}`, { headers: { authorization: started.authorization } });
  expect(res.status(), `${path}: ${await res.text()}`).toBe(200);
  return (await res.json()) as T;
}

test("the API page's examples work as written against npm start's defaults", async ({ request }) => {
  const script = documentedApiExamples();
  expect(script).toContain('"status":"NORMALIZED","expectedVersion":0');
  const answersDir = mkdtempSync(join(tmpdir(), 'bridge-api-examples-'));
  // Each call is made as written; the wrapper only keeps its answer (in a file: calls in `$(…)` run in subshells)
  // and makes a refused call (4xx, 5xx) end the script.
  const prelude = `n=0; echo 0 > '${answersDir}/count'
curl() {
  local n=$(( $(cat '${answersDir}/count') + 1 )); echo $n > '${answersDir}/count'; echo "curl $*" >&2
  command curl --fail-with-body "$@" | tee '${answersDir}/'$n.json; local status=\${PIPESTATUS[0]}; echo; return $status
}
`;
  const host = new URL(started.url).host;
  const runnable = script.replaceAll('localhost:3000', host).replace("H='authorization: Bearer bc_…'", `H='authorization: ${started.authorization}'`);
  const result = await runBash(prelude + runnable);
  expect(result.code, `the API page's examples failed:\n${result.stdout}\n${result.stderr}`).toBe(0);

  const calls = Number(readFileSync(join(answersDir, 'count'), 'utf8'));
  const answer = (n: number) => readFileSync(join(answersDir, `${n}.json`), 'utf8');
  expect(calls).toBe((script.match(/(^|\$\()curl /gm) ?? []).length);
  for (const [call, pairs] of documentedAnswers(script)) {
    for (const pair of pairs) expect(answer(call), `call ${call} of the API page's examples`).toContain(pair);
  }

  // The first intent went through the pipeline, as the page says.
  const first = (JSON.parse(answer(1)) as { id: string }).id;
  await expect.poll(async () => (await getJson<{ status: string }>(request, `/api/intents/${first}`)).status, { timeout: 30_000 }).toBe('COMPLETED');
  // The one moved by hand stays where it was put, with its corrections, and claiming is on again.
  const byHand = (JSON.parse(answer(3)) as { id: string }).id;
  expect(await getJson(request, `/api/intents/${byHand}`)).toMatchObject({ status: 'NORMALIZED', version: 3, payload: { order: 'A-17', amount: 105 } });
  expect(await getJson(request, '/api/workers')).toMatchObject({ paused: { paused: false } });
});

test('the demo data leaves RECEIVED intents for an operator to move, beside the pipeline at work', async ({ request }) => {
  // Once the worker has taken everything queued, what is left in RECEIVED is what the demo held out for people.
  await expect
    .poll(async () => {
      const { queue } = await getJson<{ queue: { ready: number; running: number } }>(request, '/api/workers');
      return queue.ready + queue.running;
    }, { timeout: 60_000 })
    .toBe(0);
  const received = await getJson<{ items: { id: string; version: number; source: string }[] }>(request, '/api/intents?status=RECEIVED&limit=100');
  // Half of the demo's 50 RECEIVED intents are held out of the pipeline; the worker completed the other half.
  expect(received.items).toHaveLength(25);
  const held = received.items[0];
  const moved = await request.post(`${started.url}/api/intents/${held.id}/status`, {
    headers: { authorization: started.authorization },
    data: { status: 'NORMALIZED', expectedVersion: held.version },
  });
  expect(moved.status(), await moved.text()).toBe(200);
  // The queue's own record: the other 25, and the API page's new intent, went through the pipeline.
  const { queue } = await getJson<{ queue: { completed: number } }>(request, '/api/workers');
  expect(queue.completed).toBeGreaterThanOrEqual(26);
});

test('Ctrl-C ends with "stopped" and no database errors; a restart keeps the psql port and shows the worker stopped, not lost', async ({ request }) => {
  const psqlLine = started.lines.find((line) => line.includes('psql: psql '));
  expect(psqlLine).toBeDefined();
  const first = started;
  // Ctrl-C reaches every process of the terminal's group at once: the worker may say it stopped before npm start
  // says "stopping…", so what it printed is read from the moment the key is pressed.
  const pressedAt = first.lines.length;
  expect(await first.ctrlC()).toBe(0);
  const afterCtrlC = first.lines.slice(pressedAt);
  const shown = afterCtrlC.join('\n');
  expect(afterCtrlC.filter((line) => line.trim()).at(-1), shown).toBe('[bridge] stopped');
  expect(afterCtrlC.filter((line) => /error|terminating connection|ECONNREFUSED|SQLSTATE|did not stop/i.test(line)), shown).toEqual([]);
  expect(afterCtrlC.some((line) => /\[worker\] .* stopped/.test(line)), shown).toBe(true);

  started = await npmStart(dataDir);
  // The psql line follows the "ready" line the start resolves on: wait for it to arrive.
  const restarted = started;
  await expect.poll(() => restarted.lines.find((line) => line.includes('psql: psql '))).toBe(psqlLine);
  const { workers } = await getJson<{ workers: { name: string; state: string }[] }>(request, '/api/workers');
  expect(workers.map((w) => w.state).sort()).toEqual(expect.arrayContaining(['stopped']));
  expect(workers.filter((w) => w.state === 'lost')).toEqual([]);
});
