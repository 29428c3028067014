/** Parses the exposition into `series → value` (series as printed: name{labels}). */
export function parseExposition(text: string): { values: Map<string, number>; types: Map<string, string> } {
  const values = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) types.set(type[1], type[2]);
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    values.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return { values, types };
}

