// A blob handed to the layer store while it is still downloading, so unpacking overlaps the
// download. The download writes every chunk to its spool file and here; the stream ends only after
// the download has verified the digest, so a consumer that reaches the end has verified bytes. A
// download that has to start over after bytes went out fails the stream with DownloadRestarted:
// the consumer's work is void and the pull applies the spooled file instead.
import { Readable } from 'node:stream';
import { EngineError } from '../../lib/errors.ts';

export class DownloadRestarted extends EngineError {
  constructor() {
    super('Unavailable', 'layer download restarted');
  }
}

export class LiveBlob {
  readonly stream: Readable;
  /** Set once the download gave up on this stream (the consumer falls back to the file). */
  restarted = false;
  /** Bytes handed over so far. */
  sent = 0;
  private wake: (() => void) | null = null;
  private done = false;

  constructor(highWaterMark = 512 << 10) {
    this.stream = new Readable({
      highWaterMark,
      read: () => this.resume(),
      destroy: (err, cb) => {
        this.done = true;
        this.resume();
        cb(err);
      },
    });
    // The consumer may not be reading yet when the download fails; it sees the error when it does.
    this.stream.on('error', () => {});
  }

  private resume(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** Hand one chunk over. Resolves when the consumer wants more, at once when it has gone away. */
  async write(chunk: Buffer): Promise<void> {
    if (this.done) return;
    this.sent += chunk.length;
    if (this.stream.push(chunk)) return;
    await new Promise<void>((resolve) => (this.wake = resolve));
  }

  /** The download is complete and verified. */
  end(): void {
    if (this.done) return;
    this.done = true;
    this.stream.push(null);
  }

  /** The download starts over (or failed): what was sent is void, even if the consumer already gave up. */
  restart(): void {
    this.restarted = true;
    if (this.done) return;
    this.done = true;
    this.stream.destroy(new DownloadRestarted());
  }
}
