import { expect, test } from './support/test';

/**
 * /api-docs renders the OpenAPI document with Swagger UI served from this origin: under the console's
 * Content-Security-Policy (no CDN), with no policy violation and no script error.
 */
test('the API document renders at /api-docs from self-hosted Swagger UI, inside the CSP', async ({ page, request }) => {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  const requested: string[] = [];
  page.on('request', (r) => requested.push(r.url()));

  const doc = await request.get('/api/openapi.json');
  expect(doc.status()).toBe(200);
  expect((await doc.json()).openapi).toBe('3.1.0');

  await page.goto('/api-docs');
  const ui = page.getByTestId('swagger-ui');
  await expect(ui.getByText('Bridge Console API').first()).toBeVisible({ timeout: 20_000 });
  await expect(ui.getByText('/api/intents/{id}/status').first()).toBeVisible();
  await expect(ui.getByRole('button', { name: /Authorize/ })).toBeVisible();
  expect(problems.filter((p) => /Content Security Policy|Refused to/i.test(p))).toEqual([]);
  const origin = new URL(page.url()).origin;
  expect(requested.filter((url) => !url.startsWith(origin) && !url.startsWith('data:'))).toEqual([]);
});
