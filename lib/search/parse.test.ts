import { describe, expect, it } from 'vitest';
import { highlightRanges, jsonbText, looksLikeIdPrefix, normaliseJsonSpacing, parseSearch, tooShortPatterns, uuidPrefixRange } from './parse';

const patterns = (q: string) => {
  const p = parseSearch(q);
  if (p.kind === 'none' || p.kind === 'source') throw new Error(`no payload search for ${q}`);
  return p.payload.patterns;
};

describe('parseSearch', () => {
  it('takes a whole id, and the first characters of one as the table shows them', () => {
    expect(parseSearch('3F2A9C1B-7D4E-4C2B-9A1D-0E5F6A7B8C9D')).toMatchObject({ kind: 'id', id: '3f2a9c1b-7d4e-4c2b-9a1d-0e5f6a7b8c9d' });
    expect(parseSearch('3f2a9c1b')).toMatchObject({ kind: 'idPrefix', prefix: '3f2a9c1b' });
    expect(parseSearch('3f2a9c1b-7d')).toMatchObject({ kind: 'idPrefix' });
  });

  it('searches fewer than 8 hex characters both as the start of an id and in the payload (a reference number is hex too)', () => {
    expect(looksLikeIdPrefix('100001')).toBe(false);
    expect(parseSearch('100001')).toMatchObject({ kind: 'idOrPayload', prefix: '100001', payload: { patterns: ['100001'] } });
    expect(parseSearch('C734')).toMatchObject({ kind: 'idOrPayload', prefix: 'c734' });
    expect(parseSearch('c')).toMatchObject({ kind: 'idOrPayload', prefix: 'c' });
    expect(parseSearch('c7g4').kind).toBe('payload');
  });

  it('gives the uuid range an id prefix covers', () => {
    expect(uuidPrefixRange('3f2a9c1b-7d')).toEqual({ low: '3f2a9c1b-7d00-0000-0000-000000000000', high: '3f2a9c1b-7dff-ffff-ffff-ffffffffffff' });
  });

  it('reads payload text as the table displays it', () => {
    expect(patterns('city: Osaka')).toEqual(['"city": "Osaka']);
    expect(patterns('customer.city: Osaka')).toEqual(['"city": "Osaka']);
    expect(patterns('amount: 629.13')).toEqual(['"amount": 629.13']);
    expect(patterns('adjusted: true')).toEqual(['"adjusted": true']);
    expect(patterns('kind: payment · amount: 629.13')).toEqual(['"kind": "payment', '"amount": 629.13']);
    expect(patterns('customer: {"id":"C8919","city":"Osaka"}')).toEqual(['"customer": {"id": "C8919", "city": "Osaka"}']);
  });

  it('reads raw JSON in any spacing, in the spacing and key order PostgreSQL prints', () => {
    expect(patterns('{"city":"Osaka"}')).toEqual(['"city": "Osaka"']);
    expect(patterns('"city" :   "Osaka"')).toEqual(['"city": "Osaka"']);
    expect(patterns('"amount":629.13,"currency":"EUR"')).toEqual(['"amount": 629.13', '"currency": "EUR"']);
    expect(patterns('{"customer":{"city":"Osaka","id":"C1"}}')).toEqual(['"customer": {"id": "C1", "city": "Osaka"}']);
    expect(patterns('"Osaka"')).toEqual(['"Osaka"']);
    // A fragment cut mid-object: only its spacing is normalised.
    expect(patterns('"customer":{"id":"C1"')).toEqual(['"customer": {"id": "C1"']);
  });

  it('keeps free text as it is, and names terms too short for the index', () => {
    expect(patterns('Osaka')).toEqual(['Osaka']);
    expect(parseSearch('billing-sync')).toMatchObject({ kind: 'payload', sourceCandidate: 'billing-sync' });
    expect(parseSearch('source: billing-sync')).toEqual({ kind: 'source', source: 'billing-sync' });
    const p = parseSearch('xy');
    expect(p.kind === 'payload' && tooShortPatterns(p.payload)).toEqual(['xy']);
    expect(parseSearch('   ')).toEqual({ kind: 'none' });
  });

  it('does not read a URL as a field', () => {
    expect(patterns('https://example.com/x')).toEqual(['https://example.com/x']);
  });
});

describe('jsonb text', () => {
  it('orders keys as jsonb does (shorter first, then bytes) with its spacing', () => {
    expect(jsonbText({ currency: 'EUR', id: 1, kind: [1, { b: 2, a: null }] })).toBe('{"id": 1, "kind": [1, {"a": null, "b": 2}], "currency": "EUR"}');
  });

  it('normalises spacing outside strings only', () => {
    expect(normaliseJsonSpacing('"a b" :1 ,  "c":"d, e: f"')).toBe('"a b": 1, "c": "d, e: f"');
  });
});

describe('highlightRanges', () => {
  it('marks every match, longest first, without overlaps', () => {
    const text = 'kind: payment · customer: {"id":"C1","city":"Osaka"} · note: osaka';
    const p = parseSearch('city: Osaka');
    if (p.kind !== 'payload') throw new Error('expected a payload search');
    const ranges = highlightRanges(text, p.payload.highlights);
    expect(ranges.map(([s, e]) => text.slice(s, e))).toEqual(['"city":"Osaka"', 'osaka']);
  });
});
