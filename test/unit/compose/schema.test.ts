// The Compose subset a stack holds: accepted documents, and refusals that name the path.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { composeApp, composeIssue } from '../../../lib/compose/schema.ts';

const issue = (doc: unknown) => {
  const r = composeApp.safeParse(doc);
  assert.equal(r.success, false, JSON.stringify(doc));
  return composeIssue(r.error!);
};

test('a document with the keys the daemon acts on is accepted, short and long syntaxes alike', () => {
  const doc = {
    version: '3.9',
    services: {
      web: {
        image: 'busybox',
        command: ['httpd', '-f'],
        environment: { A: '1', B: 2, C: null },
        ports: ['8080:80', '127.0.0.1::81/udp', { target: 82, published: 8082, protocol: 'tcp' }],
        volumes: ['data:/data:ro', '/abs:/abs', { type: 'tmpfs', target: '/t', tmpfs: { size: '1m' } }],
        networks: { front: { aliases: ['www'] } },
        healthcheck: { test: ['CMD', 'true'], interval: '1s', retries: 3 },
        restart: 'on-failure:3',
        deploy: { replicas: 2, resources: { limits: { cpus: '0.5', memory: '64m' } } },
        stop_grace_period: '1m30s',
      },
      once: { image: 'busybox', restart: 'no', secrets: ['token'] },
    },
    networks: { front: null },
    volumes: { data: {} },
    secrets: { token: { content: 's3cret' } },
  };
  assert.equal(composeApp.safeParse(doc).success, true);
});

test('refusals name the path: a wrong type, an unknown key, a bad value', () => {
  assert.equal(issue({ services: { web: { image: 'b', deploy: { replicas: 'two' } } } }), 'services.web.deploy.replicas: expected integer');
  assert.equal(issue({ services: { web: { image: 'b', deploy: { replicas: 1.5 } } } }), 'services.web.deploy.replicas: expected integer');
  assert.equal(issue({ services: { web: { image: 'b', privileged: true } } }), 'services.web.privileged: key not supported by this daemon');
  assert.equal(issue({ services: { web: { image: 'b' } }, x_custom: 1 }), 'x_custom: key not supported by this daemon');
  assert.equal(issue({ services: { web: { image: 'b', restart: 'sometimes' } } }), "services.web.restart: expected no, always, unless-stopped or on-failure[:N]");
  assert.equal(issue({ services: { web: {} } }), 'services.web.image: expected string');
  assert.equal(issue({ services: {} }), 'services: expected at least one service');
  assert.equal(issue({ services: { web: { image: 'b', stop_grace_period: 'soon' } } }), 'services.web.stop_grace_period: expected a duration such as 10s or 1m30s');
});
