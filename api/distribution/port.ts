// What the image routes need from the registry client. `cmd` fills it with the distribution
// driver (drivers/distribution), which satisfies it structurally; api imports no driver.
import type { JsonMessage } from '../streams.ts';
import type { ApiStore } from '../containers/store.ts';
import type { RegistryAuth, SearchResult } from '../../lib/ports/registry.ts';

export type { RegistryAuth, SearchResult };

export interface DistributionPort {
  push(
    ref: string,
    image: { rawConfig: string; diffIds: string[]; chainId: string | null },
    opts: { auth?: RegistryAuth; signal: AbortSignal; onProgress(msg: JsonMessage): void },
  ): Promise<{ digest: string; size: number }>;
  checkAuth(serverAddress: string, auth: RegistryAuth, signal?: AbortSignal): Promise<{ Status: 'Login Succeeded'; IdentityToken?: string }>;
  inspectDistribution(ref: string, auth: RegistryAuth | undefined, signal?: AbortSignal): Promise<{
    Descriptor: { mediaType: string; digest: string; size: number; urls?: string[] };
    Platforms: Array<{ architecture: string; os: string; variant?: string }>;
  }>;
  listTags(repo: string, auth: RegistryAuth | undefined, signal?: AbortSignal): Promise<string[]>;
  /** GET /v1/search on the index the term names. */
  search(term: string, limit: number, auth: RegistryAuth | undefined, signal?: AbortSignal): Promise<SearchResult[]>;
}

/** The pull reconciler as the pull route sees it. */
export interface PullJobsPort {
  /** Progress lines of pull `name` from now on (after the latest ones so far); answers the unsubscribe. */
  watch(name: string, fn: (msg: JsonMessage) => void): () => void;
  /** Credentials for the next run of pull `name` (kept in memory only). */
  setCredentials(name: string, auth: RegistryAuth | undefined): void;
}

/** The store operations the pull and push routes use (store/store.ts implements them). */
export type DistributionStore = Pick<ApiStore, 'get' | 'list' | 'create' | 'updateSpec' | 'waitFor'>;

export { authConfigOf, decodeRegistryAuth } from '../../lib/registry-auth.ts';
