import { Fragment, type ReactNode } from 'react';
import { highlightRanges, parseSearch } from '@/lib/search/parse';
import styles from './intents.module.css';

/** What to mark in a row for a search: the id's start, the source, the payload text (lib/search/parse.ts). */
export function searchHighlights(q: string) {
  const parsed = parseSearch(q);
  const sourceName = parsed.kind === 'source' ? parsed.source : parsed.kind === 'payload' ? parsed.sourceCandidate : null;
  return {
    // The table shows an id's first 8 characters: that is where an id search matches.
    id: parsed.kind === 'id' ? [parsed.id.slice(0, 8)] : parsed.kind === 'idPrefix' || parsed.kind === 'idOrPayload' ? [parsed.prefix.slice(0, 8)] : [],
    // An id no intent has is searched in the payload instead (a payload may mention it).
    payload: parsed.kind === 'source' || parsed.kind === 'none' ? [] : parsed.payload.highlights,
    source: (source: string) => (sourceName && source === sourceName ? [source] : []),
  };
}

/** Past this many characters a match would sit behind the cell's ellipsis: the cell then starts near it. */
const VISIBLE_START = 48;

export type SearchHighlights = ReturnType<typeof searchHighlights>;

/**
 * `text` with the parts that match `marks` in <mark> (case-insensitive). With `snippet`, a first match far into
 * the text is brought into view: the text starts at the field before it, after an ellipsis.
 */
export function Highlighted({ text: full, marks, snippet = false }: { text: string; marks: string[]; snippet?: boolean }) {
  if (!marks.length) return <>{full}</>;
  let text = full;
  let ranges = highlightRanges(text, marks);
  if (!ranges.length) return <>{text}</>;
  if (snippet && ranges[0][0] > VISIBLE_START) {
    const fieldStart = text.lastIndexOf(' · ', ranges[0][0]);
    const from = fieldStart >= 0 ? fieldStart + 3 : ranges[0][0];
    text = `… ${text.slice(from)}`;
    ranges = highlightRanges(text, marks);
  }
  const parts: ReactNode[] = [];
  let at = 0;
  ranges.forEach(([start, end], i) => {
    if (start > at) parts.push(<Fragment key={`t${i}`}>{text.slice(at, start)}</Fragment>);
    parts.push(
      <mark key={`m${i}`} className={styles.match}>
        {text.slice(start, end)}
      </mark>,
    );
    at = end;
  });
  if (at < text.length) parts.push(<Fragment key="rest">{text.slice(at)}</Fragment>);
  return <>{parts}</>;
}
