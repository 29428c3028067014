import type { z } from 'zod';
// Zod's default messages in the console's words, wherever inputs are checked (lib/shared/messages.ts).
import './messages';
import { ValidationError, type FieldIssue } from './errors';

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let current = input;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/** One issue per bad field, named by its path (`root` when the value itself is wrong); a missing field "is required". */
export function fieldIssues(error: z.ZodError, input?: unknown, root = 'body'): FieldIssue[] {
  const name = (path: PropertyKey[]) => (path.length ? [root === 'body' ? undefined : root, ...path].filter((p) => p !== undefined).join('.') : root);
  return error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ field: name([...issue.path, key]), message: 'is not a known field' }));
    }
    // Whatever the rule (a type, an enum, a format), a field that is absent is reported as missing.
    const missing = issue.path.length > 0 && valueAt(input, issue.path) === undefined;
    return [{ field: name(issue.path), message: missing ? 'is required' : issue.message }];
  });
}

/**
 * Values this process already parsed, with the schema that parsed them. A door validates its input with the
 * domain's own schema (to get typed values and answer bad input before anything else happens); when the domain
 * function then parses the very same object with the same schema, the work is not done twice.
 */
const parsedWith = new WeakMap<object, z.ZodType>();

/** Parses or throws a ValidationError naming each bad field. `root` names the value itself (default: the body). */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, root?: string): z.infer<S> {
  if (typeof input === 'object' && input !== null && parsedWith.get(input) === schema) return input as z.infer<S>;
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new ValidationError(fieldIssues(parsed.error, input, root));
  if (typeof parsed.data === 'object' && parsed.data !== null) parsedWith.set(parsed.data, schema);
  return parsed.data;
}
