import { expect, test, type Page } from './support/test';
import { useSessionOf } from './auth';
import { seedIntent, short, uniqueMarker } from './intents-fixtures';
import { editLeaseResource } from '../lib/leases/edit-names';
import { leaseHistory } from '../lib/leases/events';

/**
 * Reviewers' edit leases: the first reviewer to work in the correction form holds the intent's edit lease; a second
 * reviewer sees who edits it and until when, and can still apply a correction (the version check protects both).
 * The lease is released when the first reviewer leaves, and the Locks page lists it with its events meanwhile.
 */
const form = (page: Page) => page.getByRole('form', { name: 'Correction' });

test('a second reviewer sees “being edited by X until hh:mm”; leaving releases the lease', async ({ browser, baseURL }) => {
  // Three people's sessions and eight page loads, each step waiting for what it asserts: more than the default
  // minute when the suites run side by side on two cores.
  test.slow();
  const intent = await seedIntent('PROCESSED', { marker: uniqueMarker('e2e-lease'), amount: 10 });

  const firstContext = await browser.newContext();
  const first = await useSessionOf(firstContext, baseURL!, ['reviewer']);
  const firstPage = await firstContext.newPage();
  await firstPage.goto(`/intents/${intent.id}`);
  await form(firstPage).getByLabel('Reason').focus();
  await expect(form(firstPage).getByTestId('edit-lease')).toContainText('You are editing this intent');

  const secondContext = await browser.newContext();
  await useSessionOf(secondContext, baseURL!, ['reviewer', 'oncall']);
  const secondPage = await secondContext.newPage();
  await secondPage.goto(`/intents/${intent.id}`);
  const notice = form(secondPage).getByTestId('edit-lease');
  await expect(notice).toContainText(`Being edited by ${first.username} until`);
  await expect(notice).toHaveText(/until \d\d:\d\d UTC/);

  // The Locks page lists the lease and its grant: the owner and the user who took it in columns of their own, and
  // the token for this reviewer (who may use leases).
  await secondPage.goto('/locks');
  const leases = secondPage.getByTestId('leases-table');
  await expect(leases).toContainText(first.username);
  await expect(leases.getByRole('columnheader', { name: 'taken by' })).toBeVisible();
  // This intent's row: other tests running beside this one may hold edit leases of their own intents.
  await expect(leases.getByRole('row').filter({ hasText: `edit of ${short(intent.id)}` }).getByTestId('lease-actor')).toHaveText(first.username);
  await expect(leases.getByRole('columnheader', { name: 'token' })).toBeVisible();
  await expect(secondPage.getByTestId('lease-events-table')).toContainText('acquired');

  // A viewer sees who holds it, not its token.
  const viewerContext = await browser.newContext();
  await useSessionOf(viewerContext, baseURL!, ['viewer']);
  const viewerPage = await viewerContext.newPage();
  await viewerPage.goto('/locks');
  await expect(viewerPage.getByTestId('leases-table')).toContainText(first.username);
  await expect(viewerPage.getByTestId('leases-table').getByRole('columnheader', { name: 'token' })).toHaveCount(0);
  await viewerContext.close();

  // The first reviewer leaves: the lease is released, and the second one's form says nothing any more.
  await firstPage.goto('/intents');
  await expect(secondPage.getByTestId('lease-events-table')).toContainText('released', { timeout: 15_000 });
  await secondPage.goto(`/intents/${intent.id}`);
  await form(secondPage).getByLabel('Reason').focus();
  await expect(form(secondPage).getByTestId('edit-lease')).toContainText('You are editing this intent');

  await firstContext.close();
  await secondContext.close();
});

test('the same reviewer in a second tab is told the edit is their own, and focusing the form there asks nobody again', async ({ context, baseURL }) => {
  const intent = await seedIntent('PROCESSED', { marker: uniqueMarker('e2e-lease-tabs'), amount: 10 });
  await useSessionOf(context, baseURL!, ['reviewer']);
  const firstTab = await context.newPage();
  await firstTab.goto(`/intents/${intent.id}`);
  await form(firstTab).getByLabel('Reason').focus();
  await expect(form(firstTab).getByTestId('edit-lease')).toContainText('You are editing this intent');

  const secondTab = await context.newPage();
  await secondTab.goto(`/intents/${intent.id}`);
  const notice = form(secondTab).getByTestId('edit-lease');
  await expect(notice).toContainText('You are editing this intent in another tab or window (until');
  await expect(notice).not.toContainText('Being edited by');
  // Working in the form while the lease is known to be held elsewhere takes nothing: no refusal per focused field
  // on the intent's timeline.
  for (let i = 0; i < 3; i++) {
    await form(secondTab).getByLabel('Reason').focus();
    await form(secondTab).getByLabel('Reason').blur();
  }
  await firstTab.close();
  // Renewals of the first tab's lease are left out, as the timeline leaves them out.
  const events = async () => (await leaseHistory(editLeaseResource(intent.id))).map((e) => e.event).filter((e) => e !== 'refreshed');
  await expect.poll(events).toContain('released');
  expect(await events()).toEqual(['acquired', 'released']);
});
