// A kind for store tests that are about the store, not a daemon kind: any spec and status, no schema
// checks beyond "any value".
import * as z from 'zod';
import { defineKind, type Kind } from '../../../store/kind.ts';

export function testKind<S = any, T = any>(name: string): Kind<S, T> {
  return defineKind<S, T>({ name, version: 0, schema: { spec: z.any(), status: z.any() } });
}

/** `kind` with its types let go, for a test that writes records in part (only the fields under test). */
export function loose(kind: Kind<any, any>): Kind<any, any> {
  return kind;
}
