// node:http without its ES module namespace. Importing node:http as an ES module makes node build
// the namespace from every export, which reads the lazy WebSocket, CloseEvent and MessageEvent
// getters and so loads node's bundled undici (~2 MiB of heap for the daemon's life) that the
// daemon never uses. The CommonJS exports object has the same functions without that.
import type * as Http from 'node:http';

export const http: typeof Http = process.getBuiltinModule('node:http');
