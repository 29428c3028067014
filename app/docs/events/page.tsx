import Link from 'next/link';
import { MarkdownDoc } from '@/components/docs/MarkdownDoc';
import styles from '@/components/docs/doc.module.css';
import { readServedDoc } from '@/lib/console/docs';

export const metadata = { title: 'Events reference · Bridge Console' };

/**
 * docs/EVENTS.md, what the events published for other services carry and how they get out. Open like the API
 * reference (/api-docs): it describes, it grants nothing.
 */
export default async function EventsReferencePage() {
  const source = await readServedDoc('EVENTS.md');
  return (
    <>
      <p className={styles.source}>
        Events reference, from the repository’s <code>docs/EVENTS.md</code>. The JSON API: <Link href="/api-docs">API reference</Link>. What is
        going out now: <Link href="/events">Events</Link>.
      </p>
      <MarkdownDoc source={source} file="EVENTS.md" />
    </>
  );
}
