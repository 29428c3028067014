import { currentSnapshot, formatPosition } from '@/lib/live/positions';

/**
 * The live-feed position a page reads before loading its data: handed to the browser (<LiveSince>), so the event
 * stream starts from it and nothing committed between this render and the stream opening is lost. Null when it
 * cannot be read (the stream then starts from "now", and the page's own data is just as fresh).
 */
export async function livePositionForPage(): Promise<string | null> {
  try {
    return formatPosition(await currentSnapshot());
  } catch {
    return null;
  }
}
