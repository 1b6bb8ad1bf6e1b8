// engined: parse options, then run the daemon until SIGTERM/SIGINT.
import '../lib/zod-config.ts';
import { loadDaemonConfig } from '../config/load.ts';
import { EngineError } from '../lib/errors.ts';
import { runDaemon } from './daemon.ts';
import { ENGINE_VERSION, GIT_COMMIT } from './version.ts';

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
    case 'validate':
      (res.ok ? process.stdout : process.stderr).write(`${res.message}\n`);
      return res.ok ? 0 : 1;
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
