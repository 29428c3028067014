import { Fragment } from 'react';
import styles from './intents.module.css';

const TOKEN = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

/** Pretty-printed JSON with quiet syntax colours (keys, strings, numbers, literals). */
export function JsonView({ value, label }: { value: unknown; label: string }) {
  const text = JSON.stringify(value, null, 2) ?? 'undefined';
  const parts: React.ReactNode[] = [];
  let last = 0;
  for (const m of text.matchAll(TOKEN)) {
    const at = m.index ?? 0;
    if (at > last) parts.push(text.slice(last, at));
    const [whole, str, colon, literal, num] = m;
    if (str !== undefined && colon !== undefined) parts.push(<span key={at} className={styles.jsonKey}>{str}</span>, colon);
    else if (str !== undefined) parts.push(<span key={at} className={styles.jsonString}>{str}</span>);
    else if (literal !== undefined) parts.push(<span key={at} className={styles.jsonLiteral}>{literal}</span>);
    else if (num !== undefined) parts.push(<span key={at} className={styles.jsonNumber}>{num}</span>);
    else parts.push(whole);
    last = at + whole.length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return (
    <pre className={styles.json} aria-label={label} tabIndex={0}>
      <code>
        {parts.map((p, i) => (
          <Fragment key={i}>{p}</Fragment>
        ))}
      </code>
    </pre>
  );
}
