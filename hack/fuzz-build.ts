// The fuzzer's build requests (hack/fuzz.ts): junk context bodies, Dockerfiles made of broken and
// hostile lines, and build queries with wrong values. Nothing reaches outside loopback: FROM and
// ADD name 127.0.0.1:1, and `pull` is never sent.
import { gzipSync } from 'node:zlib';
import { encodeHeader, endOfArchive, padding } from '../drivers/storage/tar-writer.ts';
import { enc, WEIRD_STRINGS, type FuzzContext, type Rng } from './fuzz.ts';

const DOCKERFILE_LINES = [
  'FROM scratch', 'FROM', 'FROM 127.0.0.1:1/nope', 'FROM a AS b AS c', 'RUN true', 'RUN ["true"]', 'RUN ["true"', 'ENV A=1 B', 'ENV', 'LABEL',
  'LABEL a=b c', 'COPY . /x', 'COPY ../../etc/passwd /', 'COPY --from=nope /a /b', 'COPY --chown=nobody:nogroup Dockerfile /', 'ADD nope /',
  'ADD http://127.0.0.1:1/x /', 'COPY * /many', 'WORKDIR', 'WORKDIR ../../..', 'EXPOSE 99999', 'EXPOSE a-b', 'ARG', 'ARG =x', 'ARG A=$B${C:-d}',
  'HEALTHCHECK --interval=1ns CMD x', 'HEALTHCHECK --retries=-1 CMD x', 'ONBUILD ONBUILD RUN x', 'ONBUILD FROM x', 'FOO bar', '\\', '# escape=x',
  'USER', 'SHELL not-json', 'SHELL []', 'VOLUME []', 'VOLUME ""', 'STOPSIGNAL', 'STOPSIGNAL NOPE', 'CMD', 'ENTRYPOINT []', 'MAINTAINER',
  'RUN --mount=type=cache,target=/x true', 'ENV A=${', 'LABEL "unterminated', 'COPY --chmod=999 Dockerfile /', 'FROM --platform=windows/amd64 scratch',
];

/** A small ustar archive of these files. */
function tarOf(files: Array<[string, Buffer]>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, data] of files) {
    parts.push(encodeHeader({ name, type: 'file', mode: 0o644, uid: 0, gid: 0, size: data.length, mtime: 0 }), data, padding(data.length));
  }
  parts.push(endOfArchive());
  return Buffer.concat(parts);
}

export function buildBody(rng: Rng, ctx: FuzzContext): Buffer | undefined {
  switch (rng.int(5)) {
    case 0: return rng.bytes(rng.int(3000));
    case 1: return undefined;
    case 2: return gzipSync(rng.bytes(rng.int(2000)));
    default: {
      const lines = rng.chance(0.7) ? [`FROM ${ctx.image}`] : [];
      for (let i = 0, n = rng.int(6); i < n; i++) lines.push(rng.chance(0.85) ? rng.pick(DOCKERFILE_LINES) : rng.pick(WEIRD_STRINGS));
      const files: Array<[string, Buffer]> = [[rng.chance(0.9) ? 'Dockerfile' : rng.pick(['dockerfile', '../Dockerfile', '/Dockerfile', 'x/Dockerfile']), Buffer.from(lines.join('\n'))]];
      if (rng.chance(0.3)) files.push(['.dockerignore', Buffer.from(rng.pick(['*', '!', '[', 'Dockerfile', '**/..']))]);
      const tar = tarOf(files);
      return rng.chance(0.5) ? tar : rng.chance(0.5) ? gzipSync(tar) : tar.subarray(0, rng.int(tar.length));
    }
  }
}

export function buildQuery(rng: Rng, ctx: FuzzContext): string {
  const parts: string[] = [];
  const values: Record<string, string[]> = {
    t: ['', 'UPPER', `${ctx.prefix}/b:1`, 'a@sha256:zz', ':'], dockerfile: ['', '/etc/passwd', '../../x', 'x'.repeat(300), 'Dockerfile'],
    buildargs: ['', '{', '{"A":1}', '{"A":null}', '[]', 'null'], labels: ['{', '{"a":[1]}', '{"a":"b"}'], cachefrom: ['{', '["x"]', '[1]'],
    shmsize: ['-1', 'x', '99999999999999999999'], memory: ['-1', 'x', '1'], target: ['', 'nope', 'b'], platform: ['', 'windows', 'linux/nope/x/y', '%'],
    networkmode: ['', 'none', 'host', 'container:nope', 'nope'], q: ['1'], nocache: ['1'], rm: ['0'], forcerm: ['1'], squash: ['1'],
    version: ['1', '2', 'x'], isolation: ['hyperv', 'default'], securityopt: ['x'], extrahosts: ['x', 'a:b:c'], ulimits: ['{', '[{}]'],
  };
  for (let i = 0, n = 1 + rng.int(4); i < n; i++) {
    const k = rng.pick(Object.keys(values));
    parts.push(`${k}=${enc(rng.pick(values[k]!))}`);
  }
  return '?' + parts.join('&');
}
