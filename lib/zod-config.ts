// zod settings for the daemon, applied before any schema is built (cmd/engined.ts imports this
// module first: an object schema reads the setting when it is made).
//
// jitless: by default zod compiles a parser for each object schema with `new Function` the first
// time it parses; after a working session the daemon held ~40 of them, their source text, bytecode
// and machine code (~1 MiB). The generic parser is as fast for the daemon's request bodies and store
// records (hack/bench.sh --quick pairs: run cycles, list and inspect throughput unchanged).
import * as z from 'zod';

z.config({ jitless: true });
