import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export const runtime = 'nodejs';

/**
 * Swagger UI's own files, served from the installed `swagger-ui-dist` package: the console's Content-Security-Policy
 * allows scripts and styles from this origin only, so /api-docs cannot load them from a CDN. Only these files.
 */
// A Map, not an object literal: `__proto__` or `constructor` must not name a file.
const FILES = new Map<string, string>([
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['swagger-ui.css', 'text/css; charset=utf-8'],
]);

export async function GET(_request: Request, { params }: { params: Promise<{ file: string }> }): Promise<Response> {
  const { file } = await params;
  const type = FILES.get(file);
  if (!type) return new Response('Not found', { status: 404, headers: { 'Content-Type': 'text/plain' } });
  try {
    const body = await readFile(join(process.cwd(), 'node_modules', 'swagger-ui-dist', file));
    return new Response(new Uint8Array(body), { headers: { 'Content-Type': type, 'Cache-Control': 'public, max-age=3600' } });
  } catch (err) {
    // One line, without the server's paths: the code says what went wrong (ENOENT: not installed).
    console.error(`[api-docs] cannot read swagger-ui-dist's ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'}): is swagger-ui-dist installed?`);
    return new Response('Swagger UI is not installed (npm install).', { status: 404, headers: { 'Content-Type': 'text/plain' } });
  }
}
