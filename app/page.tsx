import { listIntents } from '@/lib/intents/queries';

export const dynamic = 'force-dynamic';

export default async function Home() {
  const { items } = await listIntents({ limit: 50 });
  return (
    <main>
      <h1>Intents</h1>
      <ul>
        {items.map((i) => (
          <li key={i.id}>
            {i.id} {i.status} v{i.version}
          </li>
        ))}
      </ul>
    </main>
  );
}
