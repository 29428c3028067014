import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fieldIssues } from './validation';

/** Zod's default messages, in the console's words (./messages.ts), for rules written without their own. */
describe('default messages', () => {
  const issues = (schema: z.ZodType, input: unknown) => {
    const parsed = schema.safeParse(input);
    if (parsed.success) throw new Error('expected a refusal');
    return fieldIssues(parsed.error, input);
  };

  it('say what a field must be, as the console’s own rules do', () => {
    const schema = z.strictObject({
      approved: z.boolean(),
      note: z.string().max(3),
      tags: z.array(z.string()).min(2),
      mode: z.enum(['FAILFAST', 'CONTINUE']),
      count: z.number().gt(3),
      email: z.email(),
      either: z.union([z.string(), z.number()]),
    });
    const input = { approved: 'yes', note: 'abcdef', tags: ['a'], mode: 'fast', count: 3, email: 'x', either: true, extra: 1 };
    expect(issues(schema, input)).toEqual([
      { field: 'approved', message: 'must be true or false' },
      { field: 'note', message: 'must have at most 3 characters' },
      { field: 'tags', message: 'must have at least 2 items' },
      { field: 'mode', message: 'must be one of "FAILFAST", "CONTINUE"' },
      { field: 'count', message: 'must be more than 3' },
      { field: 'email', message: 'must be a valid email' },
      { field: 'either', message: 'matches none of the forms it may take' },
      { field: 'extra', message: 'is not a known field' },
    ]);
  });

  it('a JSON Schema read into Zod (a wait’s answer) speaks the same way', () => {
    const schema = z.fromJSONSchema({ type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'], additionalProperties: false });
    expect(issues(schema, { approved: 'yes' })).toEqual([{ field: 'approved', message: 'must be true or false' }]);
  });

  it('leaves a rule’s own message alone', () => {
    expect(issues(z.object({ n: z.number({ error: 'must be a count' }) }), { n: 'x' })).toEqual([{ field: 'n', message: 'must be a count' }]);
  });
});
