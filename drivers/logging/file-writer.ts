// The file drivers' writers (json-file, local) made from a plain description, so the same writer
// can be made in the daemon's thread or in the log thread (./log-thread.ts) and carry on a log
// another writer started.
import type { BatchedLogFile, FileLog, Held } from './batched-file.ts';
import type { ContainerLogInfo } from './info.ts';
import { JsonFileWriter, jsonFileAttrs } from './json-file.ts';
import { LocalWriter, localLogOptions } from './local.ts';
import { fileLogOptions, type FileLogOptions } from './file-options.ts';

/** What a file writer is made from (structured-cloneable: it crosses to the log thread). */
export interface FileWriterSpec {
  kind: 'json-file' | 'local';
  path: string;
  opts: FileLogOptions;
  /** json-file's `,"attrs":{...}` or ''. */
  extra: string;
}

/** The spec of a `json-file` or `local` log; throws on bad options as the reference's New. */
export function fileWriterSpec(kind: 'json-file' | 'local', path: string, config: Record<string, string>, info?: ContainerLogInfo): FileWriterSpec {
  if (kind === 'local') return { kind, path, opts: localLogOptions(config), extra: '' };
  return { kind, path, opts: fileLogOptions(config), extra: jsonFileAttrs(info, config) };
}

/** A writer for the spec, going on from `held` (what an earlier writer left waiting for its newline). */
export function newFileWriter(spec: FileWriterSpec, log: FileLog, held?: Held): BatchedLogFile<string | Buffer> {
  if (spec.kind === 'local') return new LocalWriter(spec.path, spec.opts, log, held);
  return new JsonFileWriter(spec.path, spec.opts, log, spec.extra, held);
}
