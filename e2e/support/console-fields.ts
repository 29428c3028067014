import { expect, type Locator } from '@playwright/test';

/**
 * A filter form's inputs and selects are the console's shared fields (`.field`, app/globals.css), as on the Intents
 * page, not the browser's bare controls: each is as tall as the form's Apply button and rounded like it.
 */
export async function expectConsoleFields(form: Locator): Promise<void> {
  const look = (element: Locator) => element.evaluate((e) => ({ height: getComputedStyle(e).height, radius: getComputedStyle(e).borderTopLeftRadius }));
  const button = await look(form.getByRole('button', { name: 'Apply' }));
  // Text fields and choices; a checkbox is a box, not a field.
  const controls = await form.locator('input:not([type="checkbox"]), select').all();
  expect(controls.length).toBeGreaterThan(0);
  for (const control of controls) expect(await look(control), `${await control.getAttribute('name')}`).toEqual(button);
}
