import { defineConfig } from 'prisma/config';

// Prisma 7 reads the connection from here, not from the schema. `prisma migrate` is not used on these machines
// (lib/db/migrate.ts applies the migrations), but a machine with Prisma's engines can run it with this file.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres' },
});
