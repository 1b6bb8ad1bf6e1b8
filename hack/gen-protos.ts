// Writes drivers/supervisor/protos/descriptor.json: the supervisor's protobuf definitions (the
// .proto files beside it, field names kept snake_case) as protobufjs's JSON descriptor, which the
// daemon loads at start-up. Parsing the .proto text there instead cost start-up time and, as its
// tokenizer loop got hot, an optimizing compile that brought ~5 MiB of the compiler's code into
// the daemon's resident memory for good. Run after changing a .proto file:
//   node_modules/.bin/node hack/gen-protos.ts
// (test/unit/supervisor/proto-descriptor.test.ts fails while the descriptor is stale).
import protobuf from 'protobufjs';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'drivers', 'supervisor', 'protos');
const FILES = ['version.proto', 'containers.proto', 'tasks.proto', 'events.proto', 'task-events.proto', 'runc-options.proto', 'runtime-options.proto'];

/** The descriptor's text, made from the .proto files. */
export function descriptorText(): string {
  const root = new protobuf.Root().loadSync(FILES.map((f) => join(PROTO_DIR, f)), { keepCase: true });
  root.resolveAll();
  return `${JSON.stringify(root.toJSON())}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(join(PROTO_DIR, 'descriptor.json'), descriptorText());
}
