// POST /debug/fault?kind=exception|rejection: a fault injected on purpose, for the test that shows
// what the daemon does with an uncaught exception or an unhandled rejection (it logs the error with
// its source-mapped stack and exits non-zero: cmd/daemon.ts). Registered only when the daemon's
// environment says ENGINE_DEBUG_FAULTS=1 (cmd/components/api.ts): no configuration key or client
// can turn it on. The reply (202) is sent first; the fault comes just after, outside the request.
import * as z from 'zod';
import type { App } from '../app.ts';
import { invalidArgument } from '../../lib/errors.ts';

export const FAULT_ENV = 'ENGINE_DEBUG_FAULTS';

/** Whether this environment asks for the fault route. */
export function faultsEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[FAULT_ENV] === '1';
}

/** Throws or rejects outside any request (the test finds this file in the logged stack). */
function injectedFault(kind: 'exception' | 'rejection'): void {
  const err = new Error(`injected ${kind} (POST /debug/fault)`);
  if (kind === 'exception') {
    setImmediate(() => {
      throw err;
    });
  } else {
    void Promise.reject(err);
  }
}

export function faultRoutes() {
  return async function register(app: App): Promise<void> {
    const query = z.looseObject({ kind: z.string().optional() });
    app.post('/debug/fault', { schema: { querystring: query } }, async (req, reply) => {
      const kind = req.query.kind;
      if (kind !== 'exception' && kind !== 'rejection') throw invalidArgument(`kind must be exception or rejection, not ${JSON.stringify(kind ?? '')}`);
      reply.code(202).send({ kind });
      const inject = () => setTimeout(() => injectedFault(kind), 10);
      if (reply.raw.writableFinished) inject();
      else reply.raw.once('finish', inject);
      return reply;
    });
  };
}
