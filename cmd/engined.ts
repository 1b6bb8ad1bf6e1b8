// engined: parse options, then run the daemon until SIGTERM/SIGINT.
import '../lib/zod-config.ts';
import { fileErrorPrefix, loadDaemonConfig } from '../config/load.ts';
import type { DaemonConfig } from '../config/options.ts';
import { createRuntimes } from '../drivers/supervisor/runtimes.ts';
import { EngineError } from '../lib/errors.ts';
import { runDaemon } from './daemon.ts';
import { ENGINE_VERSION, GIT_COMMIT } from './version.ts';

/** Why the runtimes of `c` do not make a table (the check a reload's runtime owner makes), if they do not. */
function runtimeTableError(c: DaemonConfig): string | undefined {
  try {
    createRuntimes({ defaultRuntime: c.defaultRuntime || 'stdrt', runtimes: c.runtimes ?? {}, execRoot: c.execRoot });
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

async function main(): Promise<number> {
  let res;
  try {
    res = loadDaemonConfig(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`engined: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  switch (res.kind) {
    case 'help':
      process.stdout.write(res.text);
      return 0;
    case 'version':
      process.stdout.write(`Engine version ${ENGINE_VERSION}, build ${GIT_COMMIT}\n`);
      return 0;
    case 'validate': {
      // What a reload checks besides the options: the runtime table must hold together.
      const refused = res.ok && res.config ? runtimeTableError(res.config) : undefined;
      if (refused) {
        process.stderr.write(`${fileErrorPrefix(res.config!.configFile)}${refused}\n`);
        return 1;
      }
      (res.ok ? process.stdout : process.stderr).write(`${res.message}\n`);
      return res.ok ? 0 : 1;
    }
    default:
      return runDaemon(res.config, res.sources);
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    // A refusal the daemon words itself (bad address, busy pidfile, ...) needs no stack trace.
    const plain = err instanceof EngineError || (err instanceof Error && (err as NodeJS.ErrnoException).code !== undefined);
    process.stderr.write(`engined: ${err instanceof Error ? (plain ? err.message : (err.stack ?? err.message)) : String(err)}\n`);
    process.exit(1);
  },
);
