import { runningHubPosition } from '@/lib/live/hub';
import { currentSnapshot, formatPosition } from '@/lib/live/positions';

/**
 * The live-feed position a page reads before loading its data: handed to the browser (<LiveSince>), so the event
 * stream starts from it and nothing committed between this render and the stream opening is lost. Null when it
 * cannot be read (the stream then starts from "now", and the page's own data is just as fresh).
 *
 * Any position from before the page's data is read is safe: the stream re-sends what committed after it, and a
 * re-sent event only makes a page read again. So where this process's live hub is running, its last position (at
 * most a round old, a second when nothing happens) serves without a query; otherwise the database is asked.
 */
export async function livePositionForPage(): Promise<string | null> {
  const running = runningHubPosition();
  if (running) return running;
  try {
    return formatPosition(await currentSnapshot());
  } catch {
    return null;
  }
}
