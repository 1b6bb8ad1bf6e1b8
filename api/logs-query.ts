// The query of a logs request (GET /containers/{id}/logs, /services/{id}/logs, /tasks/{id}/logs) as
// the reference reads it.
import * as z from 'zod';
import { invalidArgument } from '../lib/errors.ts';
import { q, strconvError } from './request.ts';

export const logsQuery = z.looseObject({
  stdout: q.bool(), stderr: q.bool(), follow: q.bool(), timestamps: q.bool(), details: q.bool(),
  since: q.str(), until: q.str(), tail: q.str(),
});

/** A log time bound as the reference reads it (`<seconds>[.<fraction>]`); empty is none. */
export function logTime(v: string | undefined): number {
  if (v === undefined || v === '') return 0;
  if (!/^-?\d+(\.\d+)?$/.test(v)) throw invalidArgument(strconvError('ParseInt', v));
  return Number(v);
}

/** `tail`: a count, or anything else (`all`, junk) for every line, as the reference reads it. */
export function logTail(v: string | undefined): number {
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : -1;
}
