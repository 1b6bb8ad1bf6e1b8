// The OCI runtime-spec driver: spec builder, /etc files, bind validation, user resolution.
export { createSpecBuilder, mergeEnv, parseSecurityOpts } from './spec.ts';
export type { SpecBuilder, SpecBuilderOptions, Ulimit } from './spec.ts';
export { parseBind, validateBind } from './mounts.ts';
export type { ParsedBind } from './mounts.ts';
export { resolveUser, resolveUserSync } from './user.ts';
export type { ExecUser } from './user.ts';
export { tweakCapabilities, DEFAULT_CAPABILITIES } from './caps.ts';
export { writeEtcFiles, DEFAULT_HOSTS } from './etc-files.ts';
export { defaultSeccomp } from './seccomp.ts';
