import { describe, expect, it } from 'vitest';
import { SQLSTATE, isSqlState, sqlState } from './sqlstate';

/**
 * The shapes below are the ones Prisma 7 with @prisma/adapter-pg produced against a real PostgreSQL (recorded in
 * test/engine/sqlstate.test.ts, which checks them on live errors): the SQLSTATE sits in a different place for each
 * kind of query, and the Prisma code around it says nothing reliable about it.
 */
const adapterCause = (originalCode: string) => ({ originalCode, originalMessage: 'from postgres', kind: 'postgres' });

describe('sqlState', () => {
  it('reads a raw query error (P2010): meta.driverAdapterError.cause.originalCode', () => {
    const err = { name: 'PrismaClientKnownRequestError', code: 'P2010', meta: { driverAdapterError: { name: 'DriverAdapterError', cause: adapterCause('40P01') } } };
    expect(sqlState(err)).toBe('40P01');
  });

  it('reads a model query error (P2034, P2039, P2002) the same way, whatever its Prisma code', () => {
    for (const [code, state] of [['P2034', '40001'], ['P2039', '55P03'], ['P2002', '23505']] as const) {
      expect(sqlState({ code, meta: { modelName: 'Intent', driverAdapterError: { cause: adapterCause(state) } } })).toBe(state);
    }
  });

  it('reads a bare DriverAdapterError (a 40001 at COMMIT): cause.originalCode', () => {
    expect(sqlState({ name: 'DriverAdapterError', cause: adapterCause('40001') })).toBe('40001');
  });

  it('reads a plain pg error: its code', () => {
    expect(sqlState(Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03', severity: 'ERROR' }))).toBe('55P03');
  });

  it('follows a chain of causes a few levels deep', () => {
    const inner = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    expect(sqlState(new Error('outer', { cause: new Error('middle', { cause: inner }) }))).toBe('40P01');
  });

  it('prefers the adapter SQLSTATE over a Prisma code sitting beside it', () => {
    expect(sqlState({ code: 'P2010', meta: { driverAdapterError: { cause: adapterCause('23505') } } })).toBe('23505');
  });

  it('never mistakes a Prisma code for a SQLSTATE', () => {
    expect(sqlState({ code: 'P2028' })).toBeUndefined();
    expect(sqlState({ code: 'P1001', cause: { code: 'P2034' } })).toBeUndefined();
  });

  it('ignores Node system error codes and lowercase or odd-length codes', () => {
    expect(sqlState(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBeUndefined();
    expect(sqlState({ code: '40p01' })).toBeUndefined();
    expect(sqlState({ code: '40P0' })).toBeUndefined();
  });

  it('is undefined for anything without one, and does not read message text', () => {
    expect(sqlState(undefined)).toBeUndefined();
    expect(sqlState(null)).toBeUndefined();
    expect(sqlState('40P01')).toBeUndefined();
    expect(sqlState(new Error('deadlock detected (SQLSTATE 40P01)'))).toBeUndefined();
  });

  it('stops after five levels of causes', () => {
    let err: unknown = { code: '40P01' };
    for (let i = 0; i < 5; i++) err = { cause: err };
    expect(sqlState(err)).toBeUndefined();
    let near: unknown = { code: '40P01' };
    for (let i = 0; i < 4; i++) near = { cause: near };
    expect(sqlState(near)).toBe('40P01');
  });

  it('does not loop on a cyclic cause', () => {
    const a: { cause?: unknown } = {};
    a.cause = a;
    expect(sqlState(a)).toBeUndefined();
  });

  it('isSqlState compares against the named constants', () => {
    const err = { meta: { driverAdapterError: { cause: adapterCause(SQLSTATE.lockNotAvailable) } } };
    expect(isSqlState(err, SQLSTATE.lockNotAvailable)).toBe(true);
    expect(isSqlState(err, SQLSTATE.deadlock)).toBe(false);
  });
});
