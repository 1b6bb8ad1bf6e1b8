// The OCI/Docker image configuration blob: what registries, archives and commits carry, and what
// the store keeps as an image's raw config. Here, below every layer, so drivers can use it
// without importing the store.

/** The OCI/Docker image configuration blob, parsed. */
export interface ImageConfigBlob {
  architecture?: string;
  os?: string;
  variant?: string;
  created?: string;
  author?: string;
  comment?: string;
  docker_version?: string;
  container?: string;
  container_config?: Record<string, unknown>;
  config?: {
    User?: string;
    ExposedPorts?: Record<string, object>;
    Env?: string[];
    Entrypoint?: string[] | null;
    Cmd?: string[] | null;
    Volumes?: Record<string, object>;
    WorkingDir?: string;
    Labels?: Record<string, string> | null;
    StopSignal?: string;
    Healthcheck?: unknown;
    OnBuild?: string[] | null;
    Shell?: string[];
    ArgsEscaped?: boolean;
    [key: string]: unknown;
  };
  rootfs: { type: 'layers'; diff_ids: string[] };
  history?: Array<{ created?: string; created_by?: string; author?: string; comment?: string; empty_layer?: boolean }>;
  [key: string]: unknown;
}
