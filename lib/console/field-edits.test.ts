import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildPatch, editFor, editsFromDiff, editsFromText, parseFieldEdits, pathLabel, payloadFields, readEdit, retype, type FieldEdit } from './field-edits';
import { mergeDiff, type Json, type JsonRecord } from './json-diff';

const payload: JsonRecord = {
  amount: 10,
  paid: false,
  note: null,
  customer: { name: 'Ada', address: { city: 'Leeds' } },
  items: [
    { sku: 'A-1', qty: 2 },
    { sku: 'B-2', qty: 1 },
  ],
  tags: [],
  'odd.key': 'x',
};

describe('the payload as a list of fields', () => {
  it('lists every leaf by its path, each list whole and item by item', () => {
    expect(payloadFields(payload).map((f) => [f.label, f.kind, f.list])).toEqual([
      ['amount', 'number', false],
      ['paid', 'boolean', false],
      ['note', 'null', false],
      ['customer.name', 'string', false],
      ['customer.address.city', 'string', false],
      ['items', 'json', true],
      ['items[0].sku', 'string', false],
      ['items[0].qty', 'number', false],
      ['items[1].sku', 'string', false],
      ['items[1].qty', 'number', false],
      ['tags', 'json', true],
      ['["odd.key"]', 'string', false],
    ]);
  });

  it('keeps a long list to its first items', () => {
    const fields = payloadFields({ many: Array.from({ length: 80 }, (_, i) => i) }, 5);
    expect(fields.map((f) => f.label)).toEqual(['many', 'many[0]', 'many[1]', 'many[2]', 'many[3]', 'many[4]']);
  });

  it('names paths the way a reader expects', () => {
    expect(pathLabel(['customer', 'name'])).toBe('customer.name');
    expect(pathLabel(['items', 0, 'sku'])).toBe('items[0].sku');
    expect(pathLabel(['meta', 'a b'])).toBe('meta["a b"]');
  });
});

describe('typed values', () => {
  it('reads a number as a number, a boolean as a boolean, null as null', () => {
    expect(readEdit({ path: ['amount'], kind: 'number', input: ' 12.5 ' })).toEqual({ ok: true, value: 12.5 });
    expect(readEdit({ path: ['amount'], kind: 'number', input: '-3e2' })).toEqual({ ok: true, value: -300 });
    expect(readEdit({ path: ['paid'], kind: 'boolean', input: 'true' })).toEqual({ ok: true, value: true });
    expect(readEdit({ path: ['note'], kind: 'null', input: 'ignored' })).toEqual({ ok: true, value: null });
    expect(readEdit({ path: ['code'], kind: 'string', input: '12' })).toEqual({ ok: true, value: '12' });
    expect(readEdit({ path: ['items'], kind: 'json', input: '[1, 2]' })).toEqual({ ok: true, value: [1, 2] });
  });

  it('refuses what is not of its kind, and the verdict names the field', () => {
    for (const input of ['', '12,5', '0x10', 'Infinity', '1.2.3']) expect(readEdit({ path: ['amount'], kind: 'number', input }).ok).toBe(false);
    expect(readEdit({ path: ['items'], kind: 'json', input: '[1,' }).ok).toBe(false);
    const edits: FieldEdit[] = [
      { path: ['customer', 'name'], kind: 'string', input: 'Bo' },
      { path: ['amount'], kind: 'number', input: 'twelve' },
    ];
    expect(parseFieldEdits(payload, edits)).toEqual({ ok: false, message: 'amount: "twelve" is not a number (digits, a dot for decimals: 12.5).' });
    expect(parseFieldEdits(payload, [])).toMatchObject({ ok: false, message: expect.stringContaining('Add a field') });
  });

  it('starts a field at its current value and keeps what was typed when the type changes', () => {
    expect(editFor({ path: ['amount'], value: 10 })).toEqual({ path: ['amount'], kind: 'number', input: '10' });
    expect(editFor({ path: ['note'], value: null })).toEqual({ path: ['note'], kind: 'string', input: '' });
    const text = { path: ['code'], kind: 'string', input: '42' } satisfies FieldEdit;
    expect(retype(text, 'number')).toEqual({ ...text, kind: 'number', input: '42' });
    expect(retype(text, 'json')).toEqual({ ...text, kind: 'json', input: '"42"' });
    expect(retype(retype(text, 'json'), 'string')).toEqual(text);
    expect(retype(text, 'boolean').input).toBe('false');
  });
});

describe('the diff built from the fields', () => {
  it('nests object fields so the merge keeps their neighbours, and sends a changed list whole', () => {
    const { diff, errors } = buildPatch(payload, [
      { path: ['amount'], kind: 'number', input: '12.5' },
      { path: ['customer', 'address', 'city'], kind: 'string', input: 'York' },
      { path: ['items', 1, 'qty'], kind: 'number', input: '3' },
      { path: ['note'], kind: 'null', input: '' },
      { path: ['paid'], kind: 'boolean', input: 'true' },
    ]);
    expect(errors).toEqual([]);
    expect(diff).toEqual({
      amount: 12.5,
      customer: { address: { city: 'York' } },
      items: [
        { sku: 'A-1', qty: 2 },
        { sku: 'B-2', qty: 3 },
      ],
      note: null,
      paid: true,
    });
    expect(mergeDiff(payload, diff).customer).toEqual({ name: 'Ada', address: { city: 'York' } });
  });

  it('applies two changes to one list one after the other, and names an item that is gone', () => {
    const { diff } = buildPatch(payload, [
      { path: ['items', 0, 'qty'], kind: 'number', input: '5' },
      { path: ['items', 1, 'sku'], kind: 'string', input: 'C-3' },
    ]);
    expect(diff.items).toEqual([
      { sku: 'A-1', qty: 5 },
      { sku: 'C-3', qty: 1 },
    ]);
    const gone = buildPatch(payload, [
      { path: ['items'], kind: 'json', input: '[]' },
      { path: ['items', 1, 'qty'], kind: 'number', input: '3' },
    ]);
    expect(gone.errors).toEqual([{ field: 'items[1].qty', message: expect.stringContaining('not in the list') }]);
  });

  it('reads a JSON diff back as fields, item by item inside lists', () => {
    expect(editsFromDiff(payload, { amount: 11, customer: { name: 'Bo' }, items: [{ sku: 'A-1', qty: 2 }, { sku: 'B-2', qty: 9 }], extra: { a: true } })).toEqual([
      { path: ['amount'], kind: 'number', input: '11' },
      { path: ['customer', 'name'], kind: 'string', input: 'Bo' },
      { path: ['items', 1, 'qty'], kind: 'number', input: '9' },
      { path: ['extra', 'a'], kind: 'boolean', input: 'true' },
    ]);
  });

  it('reads the JSON editor\'s text as fields, an empty object as none, and passes on what is wrong with it', () => {
    expect(editsFromText(payload, '{\n  \n}')).toEqual({ ok: true, edits: [] });
    expect(editsFromText(payload, '')).toEqual({ ok: true, edits: [] });
    expect(editsFromText(payload, '{ "paid": true }')).toEqual({ ok: true, edits: [{ path: ['paid'], kind: 'boolean', input: 'true' }] });
    expect(editsFromText(payload, '{ "paid": tru }')).toMatchObject({ ok: false, message: expect.stringContaining('Not valid JSON') });
    expect(editsFromText(payload, '[1]')).toMatchObject({ ok: false, message: expect.stringContaining('must be a JSON object') });
  });

  it('round-trips: the fields read from any diff change any payload exactly as the diff does', () => {
    const key = fc.constantFrom('a', 'b', 'c', 'd e');
    const { json } = fc.letrec<{ json: Json }>((tie) => ({
      json: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom<Json>(null, true, false, 0, -1.5, 3e21, '', 'x'),
        fc.array(tie('json'), { maxLength: 3 }),
        fc.dictionary(key, tie('json'), { maxKeys: 3 }),
      ),
    }));
    const record = fc.dictionary(key, json, { maxKeys: 4 });
    fc.assert(
      fc.property(record, record, (before, diff) => {
        const built = buildPatch(before, editsFromDiff(before, diff));
        expect(built.errors).toEqual([]);
        expect(mergeDiff(before, built.diff)).toEqual(mergeDiff(before, diff));
      }),
      { numRuns: 500 },
    );
  });
});
