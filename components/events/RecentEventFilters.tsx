import Link from 'next/link';
import { ALL_SUBJECTS } from '@/lib/events/subjects';
import styles from './events.module.css';

/** The events browser's filters: a plain GET form to the Events page, so the filters are the URL. */
export function RecentEventFilters({ params, filtered }: { params: Record<string, string>; filtered: boolean }) {
  return (
    <form className={styles.filters} method="get" action="/events" aria-label="Event filters">
      <label className={styles.field}>
        <span>Type</span>
        <select name="type" className="field" defaultValue={params.type ?? ''}>
          <option value="">any type</option>
          {ALL_SUBJECTS.map((subject) => (
            <option key={subject} value={subject}>
              {subject}
            </option>
          ))}
        </select>
      </label>
      <label className={styles.field}>
        <span>State</span>
        <select name="state" className="field" defaultValue={params.state ?? ''}>
          <option value="">published or waiting</option>
          <option value="published">published</option>
          <option value="waiting">waiting</option>
        </select>
      </label>
      <label className={styles.field}>
        <span>Intent id</span>
        <input name="intent" defaultValue={params.intent ?? ''} placeholder="any intent" className="field mono" size={36} autoComplete="off" />
      </label>
      <div className={styles.buttons}>
        <button type="submit" className="btn btn-primary">
          Apply
        </button>
        {filtered && (
          <Link href="/events" className="btn">
            Clear
          </Link>
        )}
      </div>
    </form>
  );
}
