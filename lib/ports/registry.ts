// What passes between the registry client (drivers/distribution) and the layers that call it
// (the image routes, the pull reconciler, the builder): the credentials clients send, a search
// result, and a line of the JSON-lines progress stream. Declared below both.

/** The AuthConfig clients send base64url-encoded in X-Registry-Auth, and as the POST /auth body. */
export interface RegistryAuth {
  username?: string;
  password?: string;
  /** base64("user:password"), as docker config.json stores it. */
  auth?: string;
  email?: string;
  serveraddress?: string;
  /** OAuth2 refresh token returned by an earlier login. */
  identitytoken?: string;
  /** A bearer token sent to the registry as is. */
  registrytoken?: string;
}

/** One result of an image search, as the v1 search endpoint and the Engine API give it. */
export interface SearchResult {
  star_count: number;
  is_official: boolean;
  name: string;
  is_automated: boolean;
  description: string;
}

/** One line of the JSON-lines progress stream the docker CLI renders. */
export interface JsonMessage {
  status?: string;
  id?: string;
  stream?: string;
  progress?: string;
  progressDetail?: { current?: number; total?: number; start?: number; hidecounts?: boolean; units?: string };
  aux?: unknown;
  error?: string;
  errorDetail?: { code?: number; message: string };
}
