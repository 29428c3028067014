import { redirect } from 'next/navigation';

/** The console opens on its main view. */
export default function Home(): never {
  redirect('/intents');
}
