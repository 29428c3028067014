// The console's way of writing a moment lives beside the other rules every layer shares; pages import it from here.
export { formatUtc, formatUtcTime } from '@/lib/shared/time';
