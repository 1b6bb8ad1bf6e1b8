// The JSON shapes of images on the wire: GET /images/json entries and GET /images/{name}/json.
import { familiarName } from '../../lib/reference.ts';
import { ZERO_TIME } from '../../lib/ids.ts';
import type { ApiStore } from '../containers/store.ts';
import type { ImageConfigBlob } from '../../store/kinds/image.ts';
import { References } from '../../store/kinds/reference.ts';

import { imageIdOf, shownImageId, type ImageResource } from './resolve.ts';

export interface GraphDriverInfo {
  Name: string;
  Data: Record<string, string> | null;
}

/** The parsed config blob; a broken one still yields a usable (empty) config. */
export function imageConfig(img: ImageResource): ImageConfigBlob {
  try {
    const c = JSON.parse(img.spec.rawConfig) as ImageConfigBlob;
    if (c && typeof c === 'object') return c;
  } catch {
    // fall through
  }
  return { rootfs: { type: 'layers', diff_ids: img.spec.diffIds } };
}

/** Creation time from the config in ms since the epoch (0 when absent or invalid). */
export function createdMs(cfg: ImageConfigBlob): number {
  const t = cfg.created ? Date.parse(cfg.created) : NaN;
  return Number.isFinite(t) ? t : 0;
}

/** Tags (fully normalised names) and digests of an image, in familiar form. */
export function repoTagsOf(store: Pick<ApiStore, 'list'>, imageId: string): string[] {
  return store
    .list(References)
    .filter((r) => r.spec.imageId === imageId)
    .map((r) => safeFamiliar(r.name))
    .sort();
}

export function repoDigestsOf(img: ImageResource): string[] {
  return img.spec.repoDigests.map(safeFamiliar);
}

function safeFamiliar(name: string): string {
  try {
    return familiarName(name);
  } catch {
    return name;
  }
}

/** The `Config` object of inspect: the container-config form the reference daemon (API 1.47) returns. */
export function containerConfigView(c: Record<string, unknown> | undefined): Record<string, unknown> {
  const cfg = c ?? {};
  return {
    Hostname: cfg.Hostname ?? '',
    Domainname: cfg.Domainname ?? '',
    User: cfg.User ?? '',
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    ...(cfg.ExposedPorts ? { ExposedPorts: cfg.ExposedPorts } : {}),
    Tty: false,
    OpenStdin: false,
    StdinOnce: false,
    Env: cfg.Env ?? null,
    Cmd: cfg.Cmd ?? null,
    ...(cfg.Healthcheck ? { Healthcheck: cfg.Healthcheck } : {}),
    ...(cfg.ArgsEscaped ? { ArgsEscaped: true } : {}),
    Image: cfg.Image ?? '',
    Volumes: cfg.Volumes ?? null,
    WorkingDir: cfg.WorkingDir ?? '',
    Entrypoint: cfg.Entrypoint ?? null,
    OnBuild: cfg.OnBuild ?? null,
    Labels: cfg.Labels ?? null,
    ...(cfg.StopSignal ? { StopSignal: cfg.StopSignal } : {}),
    ...(cfg.Shell ? { Shell: cfg.Shell } : {}),
  };
}

export interface InspectOptions {
  apiVersion: number;
  graphDriver: GraphDriverInfo;
}

export function inspectView(store: Pick<ApiStore, 'get' | 'list'>, img: ImageResource, o: InspectOptions): Record<string, unknown> {
  const cfg = imageConfig(img);
  const out: Record<string, unknown> = {
    Id: imageIdOf(img),
    RepoTags: repoTagsOf(store, img.name),
    RepoDigests: repoDigestsOf(img),
    Parent: shownImageId(store, img.spec.parent),
    Comment: cfg.comment ?? '',
    Created: cfg.created ?? '',
  };
  if (o.apiVersion < 1.45) {
    out.Container = cfg.container ?? '';
    out.ContainerConfig = containerConfigView(cfg.container_config);
  }
  Object.assign(out, {
    DockerVersion: cfg.docker_version ?? '',
    Author: cfg.author ?? '',
    Config: containerConfigView(cfg.config),
    Architecture: cfg.architecture ?? '',
  });
  if (cfg.variant) out.Variant = cfg.variant;
  out.Os = cfg.os ?? '';
  if (typeof cfg['os.version'] === 'string' && cfg['os.version']) out.OsVersion = cfg['os.version'];
  out.Size = img.spec.size;
  if (o.apiVersion < 1.44) out.VirtualSize = img.spec.size;
  out.GraphDriver = o.graphDriver;
  out.RootFS = { Type: 'layers', Layers: img.spec.diffIds };
  out.Metadata = { LastTagTime: lastTagTime(store, img.name) };
  return out;
}

function lastTagTime(store: Pick<ApiStore, 'list'>, imageId: string): string {
  let last = '';
  for (const r of store.list(References)) {
    if (r.spec.imageId === imageId && r.createdAt > last) last = r.createdAt;
  }
  return last || ZERO_TIME;
}

export interface SummaryOptions {
  apiVersion: number;
  /** Only these familiar tags/digests are shown (reference filter); all when undefined. */
  repoTags: string[];
  repoDigests: string[];
  containers: number;
  sharedSize: number;
  /** The parent's Id as clients see it (shownImageId). */
  parentId: string;
}

export function summaryView(img: ImageResource, o: SummaryOptions): Record<string, unknown> {
  const cfg = imageConfig(img);
  let tags = o.repoTags;
  let digests = o.repoDigests;
  if (o.apiVersion < 1.43) {
    if (tags.length === 0) tags = ['<none>:<none>'];
    if (digests.length === 0) digests = ['<none>@<none>'];
  }
  const out: Record<string, unknown> = {
    Containers: o.containers,
    Created: Math.floor(createdMs(cfg) / 1000),
    Id: imageIdOf(img),
    Labels: cfg.config?.Labels ?? {},
    ParentId: o.parentId,
    RepoDigests: digests,
    RepoTags: tags,
    SharedSize: o.sharedSize,
    Size: img.spec.size,
  };
  if (o.apiVersion < 1.44) out.VirtualSize = img.spec.size;
  return out;
}
