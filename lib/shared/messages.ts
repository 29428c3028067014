import { z } from 'zod';

/**
 * Zod's default messages in the words the console's own rules use ("must be a boolean", "must be at most 500
 * characters"), for every schema that does not say its own: the wait answers checked against a bridge's JSON Schema,
 * and any field whose rule was written without a message. Zod's own read "Invalid input: expected boolean, received
 * string" beside the console's "must be true or false". Set once, for the Zod of the process that loads this.
 */
const A: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  bigint: 'a whole number',
  object: 'a JSON object',
  array: 'an array',
  date: 'a date',
  null: 'null',
  undefined: 'absent',
};

const UNITS: Record<string, string> = { string: 'characters', array: 'items', set: 'items', file: 'bytes' };

function bound(word: 'least' | 'most', origin: string, limit: unknown, inclusive: boolean | undefined): string {
  const unit = UNITS[origin];
  if (unit) return `must have at ${word} ${String(limit)} ${unit}`;
  if (inclusive === false) return `must be ${word === 'least' ? 'more' : 'less'} than ${String(limit)}`;
  return `must be at ${word} ${String(limit)}`;
}

const listed = (values: readonly unknown[]) => values.map((v) => JSON.stringify(v)).join(', ');

export function consoleMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${A[issue.expected] ?? issue.expected}`;
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${listed(issue.values)}` : `must be one of ${listed(issue.values)}`;
    case 'too_small':
      return bound('least', issue.origin, issue.minimum, issue.inclusive);
    case 'too_big':
      return bound('most', issue.origin, issue.maximum, issue.inclusive);
    case 'invalid_format':
      return issue.format === 'regex' ? 'is not in the expected form' : `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_union':
      return 'matches none of the forms it may take';
    case 'invalid_key':
      return 'has a key that is not allowed';
    case 'invalid_element':
      return 'has a value that is not allowed';
    default:
      return undefined;
  }
}

z.config({ customError: consoleMessage });
