// The swarm routes of a node (moby's api/server/router/swarm): init, leave, inspect, update and the
// unlock key, and join (through a manager's address, or --cluster-store's etcd), answered from the node's swarm
// (./port.ts). A node in no swarm answers as the reference (503); so does one asked to init or
// join while it is in one.
import * as z from 'zod';
import type { App } from '../app.ts';
import { invalidArgument, unavailable } from '../../lib/errors.ts';
import { parseSwarmVersion, swarmObject, type SwarmSpecInput } from '../../lib/swarm/cluster-object.ts';
import { q } from '../request.ts';
import type { SwarmPort } from './port.ts';

const str = z.string().nullish();
const num = z.number().nullish();
const labels = z.record(z.string(), z.string()).nullish();
/** What a client may send as a swarm spec: every part optional, each typed as Go decodes it. */
const specBody = z.looseObject({
  Name: str,
  Labels: labels,
  Orchestration: z.looseObject({ TaskHistoryRetentionLimit: num }).nullish(),
  Raft: z.looseObject({ SnapshotInterval: num, KeepOldSnapshots: num, LogEntriesForSlowFollowers: num, ElectionTick: num, HeartbeatTick: num }).nullish(),
  Dispatcher: z.looseObject({ HeartbeatPeriod: num }).nullish(),
  CAConfig: z.looseObject({ NodeCertExpiry: num, ExternalCAs: z.array(z.unknown()).nullish(), SigningCACert: str, SigningCAKey: str, ForceRotate: num }).nullish(),
  TaskDefaults: z.looseObject({ LogDriver: z.looseObject({ Name: z.string(), Options: labels }).nullish() }).nullish(),
  EncryptionConfig: z.looseObject({ AutoLockManagers: z.boolean().nullish() }).nullish(),
});

const initBody = z.looseObject({
  ListenAddr: str,
  AdvertiseAddr: str,
  DataPathAddr: str,
  DataPathPort: num,
  ForceNewCluster: z.boolean().nullish(),
  Spec: specBody.nullish(),
  AutoLockManagers: z.boolean().nullish(),
  Availability: z.enum(['active', 'pause', 'drain', '']).nullish(),
  DefaultAddrPool: z.array(z.string()).nullish(),
  SubnetSize: num,
});

const joinBody = z.looseObject({
  ListenAddr: str,
  AdvertiseAddr: str,
  DataPathAddr: str,
  RemoteAddrs: z.array(z.string()).nullish(),
  JoinToken: str,
  Availability: z.enum(['active', 'pause', 'drain', '']).nullish(),
});

/** Go's omitted and null fields are zero: undefined here. */
function clean<T>(v: T): T {
  try {
    return JSON.parse(JSON.stringify(v, (_k, x) => (x === null ? undefined : x))) as T;
  } catch (err) {
    // A body nested deeper than the stack (Go's decoder: "exceeded max depth").
    if (err instanceof RangeError) throw invalidArgument('exceeded max depth');
    throw err;
  }
}

export function swarmRoutes(swarm: SwarmPort, notManager: string) {
  return async function register(app: App): Promise<void> {
    app.get('/swarm', async () => swarmObject(await swarm.inspect()));

    app.post('/swarm/init', { schema: { body: initBody.nullish() } }, async (req, reply) => {
      const b = clean(req.body ?? {});
      const id = await swarm.init({
        ListenAddr: b.ListenAddr ?? undefined,
        AdvertiseAddr: b.AdvertiseAddr ?? undefined,
        DataPathAddr: b.DataPathAddr ?? undefined,
        DataPathPort: b.DataPathPort ?? undefined,
        ForceNewCluster: !!b.ForceNewCluster,
        Spec: (b.Spec ?? undefined) as SwarmSpecInput | undefined,
        AutoLockManagers: !!b.AutoLockManagers,
        Availability: b.Availability ?? undefined,
        DefaultAddrPool: b.DefaultAddrPool ?? undefined,
        SubnetSize: b.SubnetSize ?? undefined,
      });
      // The node id as a JSON string.
      reply.type('application/json').send(JSON.stringify(id));
    });

    app.post('/swarm/join', { schema: { body: joinBody.nullish() } }, async (req, reply) => {
      const b = clean(req.body ?? {});
      await swarm.join({
        ListenAddr: b.ListenAddr ?? undefined,
        AdvertiseAddr: b.AdvertiseAddr ?? undefined,
        DataPathAddr: b.DataPathAddr ?? undefined,
        RemoteAddrs: b.RemoteAddrs ?? undefined,
        JoinToken: b.JoinToken ?? undefined,
        Availability: b.Availability ?? undefined,
      });
      reply.code(200).send();
    });

    app.post('/swarm/leave', { schema: { querystring: z.looseObject({ force: q.bool() }) } }, async (req, reply) => {
      await swarm.leave(req.query.force);
      reply.code(200).send();
    });

    app.post(
      '/swarm/update',
      {
        schema: {
          querystring: z.looseObject({ version: q.str(), rotateWorkerToken: q.bool(), rotateManagerToken: q.bool(), rotateManagerUnlockKey: q.bool() }),
          body: specBody.nullish(),
        },
      },
      async (req, reply) => {
        const version = parseSwarmVersion(req.query.version);
        await swarm.update({
          version,
          spec: clean(req.body ?? {}) as SwarmSpecInput,
          rotateWorkerToken: req.query.rotateWorkerToken,
          rotateManagerToken: req.query.rotateManagerToken,
          rotateManagerUnlockKey: req.query.rotateManagerUnlockKey,
        });
        reply.code(200).send();
      },
    );

    app.get('/swarm/unlockkey', async () => ({ UnlockKey: await swarm.unlockKey() }));

    app.post('/swarm/unlock', { schema: { body: z.looseObject({ UnlockKey: z.string().nullish() }).nullish() } }, async (req, reply) => {
      if (!swarm.inSwarm) throw unavailable(notManager);
      await swarm.unlock(req.body?.UnlockKey ?? '');
      reply.code(200).send();
    });
  };
}
