// Registry answers turned into the reference daemon's pull errors: the bearer challenge's OAuth2
// error first, "not found" wording for DENIED / MANIFEST_UNKNOWN / NAME_UNKNOWN, and never a
// 401 to the client (the CLI would prompt for a login).
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { NoBasicAuthError, registryError } from '../../../drivers/distribution/client.ts';
import { translatePullError } from '../../../drivers/distribution/pull.ts';
import type { HttpResponse } from '../../../drivers/distribution/transport.ts';
import { parseReference } from '../../../lib/reference.ts';

function answer(status: number, statusText: string, headers: IncomingHttpHeaders, body: unknown): HttpResponse {
  const text = body === undefined ? '' : JSON.stringify(body);
  return {
    status, statusText, headers, url: new URL('https://registry.example.com/v2/team/app/manifests/v1'), body: undefined as unknown as IncomingMessage,
    header: (n) => headers[n.toLowerCase()] as string | undefined,
    buffer: async () => Buffer.from(text),
    text: async () => text,
    discard: () => {},
  };
}

const ref = parseReference('registry.example.com/team/app:v1');
const translated = (err: unknown) => translatePullError(err, ref) as Error & { code: string };

describe('pull errors', () => {
  it('DENIED from an insufficient_scope challenge is "pull access denied" (not found)', async () => {
    const err = await registryError(answer(401, 'Unauthorized', {
      'www-authenticate': 'Bearer realm="https://auth.example.com/token",service="registry",scope="repository:team/app:pull",error="insufficient_scope"',
    }, { errors: [{ code: 'UNAUTHORIZED', message: 'authentication required' }] }));
    assert.equal(err.codes[0]!.code, 'DENIED');
    const t = translated(err);
    assert.equal(t.code, 'NotFound');
    assert.equal(t.message, "pull access denied for registry.example.com/team/app, repository does not exist or may require 'docker login': denied: requested access to the resource is denied");
  });

  it('UNAUTHORIZED is reported as is, and not as a 401', async () => {
    const err = await registryError(answer(401, 'Unauthorized', { 'www-authenticate': 'Basic realm="basic-realm"' }, { errors: [{ code: 'UNAUTHORIZED', message: 'authentication required' }] }));
    const t = translated(err);
    assert.equal(t.code, 'Internal');
    assert.equal(t.message, 'unauthorized: authentication required');
    const desc = await registryError(answer(401, 'Unauthorized', { 'www-authenticate': 'Bearer realm="r",error="invalid_token",error_description="token expired"' }, undefined));
    assert.equal(translated(desc).message, 'unauthorized: token expired');
  });

  it('MANIFEST_UNKNOWN and NAME_UNKNOWN are not found, in the first error\'s words', async () => {
    const m = await registryError(answer(404, 'Not Found', {}, { errors: [{ code: 'MANIFEST_UNKNOWN', message: 'manifest unknown' }, { code: 'X', message: 'y' }] }));
    assert.equal(translated(m).code, 'NotFound');
    assert.equal(translated(m).message, 'manifest for registry.example.com/team/app:v1 not found: manifest unknown: manifest unknown');
    const n = await registryError(answer(404, 'Not Found', {}, { errors: [{ code: 'NAME_UNKNOWN', message: 'repository name not known to registry' }] }));
    assert.equal(translated(n).message, 'repository registry.example.com/team/app not found: name unknown: repository name not known to registry');
  });

  it('a registry asking for Basic credentials the client lacks: the request is named, the code is not 401', () => {
    const err = new NoBasicAuthError('HEAD', new URL('http://127.0.0.1:5000/v2/team/app/manifests/v1'));
    const t = translated(err);
    assert.equal(t.code, 'Internal');
    assert.equal(t.message, 'Head "http://127.0.0.1:5000/v2/team/app/manifests/v1": no basic auth credentials');
  });
});
