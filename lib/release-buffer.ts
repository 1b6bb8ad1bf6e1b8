// Frees a buffer's memory now instead of at a collection that may be long in coming. A busy
// stream of output allocates little on the heap and much outside it: the buffers a pipe's reads
// and a log's writes leave behind wait for the young generation to fill, which 64 KiB chunks do
// not do, and tens of MiB of them pile up per thread (measured: ~50 MiB in the API thread while
// four containers log `yes`). Only a buffer that is its whole ArrayBuffer is freed (a read's chunk,
// a batch made by Buffer.from): slices of Node's shared pool (under 4 KiB) are left alone.
export function releaseBuffer(buf: Uint8Array): void {
  if (buf.byteOffset === 0 && buf.buffer.byteLength === buf.length && buf.buffer instanceof ArrayBuffer) buf.buffer.transfer(0);
}
