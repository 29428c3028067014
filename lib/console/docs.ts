import { readFile } from 'node:fs/promises';
import { join, posix } from 'node:path';

/**
 * The repository's docs the console serves (docs/*.md, rendered by components/docs/MarkdownDoc.tsx), by file name,
 * and where. The rest of docs/ is for people working on the console, read in the repository: a link to it from a
 * served page is shown as plain text rather than a link that would 404.
 */
export const SERVED_DOCS = {
  'EVENTS.md': { href: '/docs/events', title: 'Events reference' },
} as const;
export type ServedDoc = keyof typeof SERVED_DOCS;

/** Where a link found in a served doc goes: a page of the console, another site, or nowhere (shown as text). */
export type DocLinkTarget = { kind: 'console'; href: string } | { kind: 'external'; href: string } | { kind: 'text' };

const SERVED_BY_PATH = new Map(Object.entries(SERVED_DOCS).map(([file, doc]) => [`docs/${file}`, doc.href]));

/** Resolves a link of `from` (a served doc) as the repository would: relative to docs/. */
export function docLinkTarget(href: string, from: ServedDoc): DocLinkTarget {
  if (href.startsWith('#')) return { kind: 'console', href };
  if (/^(https?:|mailto:)/i.test(href)) return { kind: 'external', href };
  // A console path written as a link (`/api-docs`): a page of the console, not a file of the repository.
  if (href.startsWith('/')) return { kind: 'console', href };
  if (/^[a-z][a-z0-9+.-]*:/i.test(href)) return { kind: 'text' };
  const [path, hash] = href.split('#', 2);
  const file = posix.normalize(posix.join('docs', posix.dirname(from), path || from));
  const served = SERVED_BY_PATH.get(file);
  if (!served) return { kind: 'text' };
  return { kind: 'console', href: hash ? `${served}#${hash}` : served };
}

/** The doc's markdown, as the repository has it (the console runs from the repository's folder). */
export function readServedDoc(file: ServedDoc): Promise<string> {
  return readFile(join(process.cwd(), 'docs', file), 'utf8');
}
