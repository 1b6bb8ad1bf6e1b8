// Writes the operator references generated from the option table: docs/daemon-json.md and the man
// pages docs/man/engined.8 and docs/man/daemon.json.5 (config/docs.ts), and engine(1) from the
// client's usage text. Run after changing options:
//   node_modules/.bin/node hack/gen-docs.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { daemonJsonDoc, daemonJsonManPage, engineManPage, enginedManPage } from '../config/docs.ts';
import { USAGE } from '../cmd/engine.ts';
import { ENGINE_VERSION } from '../cmd/version.ts';

const repo = resolve(import.meta.dirname, '..');
mkdirSync(join(repo, 'docs', 'man'), { recursive: true });
writeFileSync(join(repo, 'docs', 'daemon-json.md'), daemonJsonDoc());
writeFileSync(join(repo, 'docs', 'man', 'engined.8'), enginedManPage(ENGINE_VERSION));
writeFileSync(join(repo, 'docs', 'man', 'daemon.json.5'), daemonJsonManPage(ENGINE_VERSION));
writeFileSync(join(repo, 'docs', 'man', 'engine.1'), engineManPage(ENGINE_VERSION, USAGE));
