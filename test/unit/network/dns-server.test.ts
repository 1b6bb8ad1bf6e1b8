import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { afterEach, test } from 'node:test';
import dnsPacket from 'dns-packet';
import { resolvConfNameservers, startDnsServer, type DnsAnswerSource, type DnsServerOptions } from '../../../drivers/network/dns-server.ts';

const log = { debug() {}, warn() {} };

// dns-packet decodes `rcode` but @types/dns-packet does not declare it.
type Reply = dnsPacket.DecodedPacket & { rcode: string };
const decode = (m: Buffer) => dnsPacket.decode(m) as Reply;

// Everything a test opens is closed here, so a failing assertion leaks no socket.
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const source: DnsAnswerSource = {
  lookup(name, type) {
    if (name !== 'web' && name !== 'web-alias') return null;
    return type === 'A' ? ['172.19.0.2'] : [];
  },
  reverse: (ip) => (ip === '172.19.0.2' ? 'web.mynet' : null),
};

async function server(over: Partial<DnsServerOptions> = {}) {
  const s = await startDnsServer({ address: '127.0.0.1', port: 0, source, upstreams: () => [], log, upstreamTimeoutMs: 200, ...over });
  cleanups.push(() => s.close());
  return s;
}

function query(name: string, type: dnsPacket.RecordType = 'A', id = 4242): Buffer {
  return dnsPacket.encode({ type: 'query', id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type, name }] });
}

function udpSocket(): dgram.Socket {
  const sock = dgram.createSocket('udp4');
  cleanups.push(() => new Promise<void>((r) => sock.close(() => r())));
  return sock;
}

/** Send raw bytes over UDP and decode the first reply (or fail after `ms`). */
function askUdp(port: number, msg: Buffer, ms = 2000): Promise<Reply> {
  const sock = udpSocket();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no UDP answer')), ms);
    sock.once('message', (m) => { clearTimeout(t); resolve(decode(m)); });
    sock.send(msg, port, '127.0.0.1');
  });
}

function askTcp(port: number, msg: Buffer): Promise<Reply> {
  const sock = net.connect(port, '127.0.0.1');
  cleanups.push(() => { sock.destroy(); });
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    sock.on('error', reject);
    sock.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) resolve(decode(buf.subarray(2, 2 + buf.readUInt16BE(0))));
    });
    const len = Buffer.alloc(2);
    len.writeUInt16BE(msg.length);
    sock.write(Buffer.concat([len, msg]));
  });
}

/** A fake upstream on UDP and TCP (same port). `truncateUdp` makes it answer UDP with TC set. */
async function upstream(opts: { truncateUdp?: boolean } = {}) {
  const seen: Array<{ proto: string; q: dnsPacket.DecodedPacket }> = [];
  const answerFor = (msg: Buffer, truncated: boolean) => {
    const q = dnsPacket.decode(msg);
    return dnsPacket.encode({
      type: 'response', id: q.id, flags: dnsPacket.RECURSION_AVAILABLE | (truncated ? dnsPacket.TRUNCATED_RESPONSE : 0),
      questions: q.questions,
      answers: truncated ? [] : [{ type: 'A', name: q.questions![0].name, ttl: 30, data: '93.184.216.34' }],
    });
  };
  // Port 0 picks a free UDP port that TCP may find taken (an ephemeral client port): retry.
  for (let attempt = 0; ; attempt++) {
    const udp = dgram.createSocket('udp4');
    udp.on('message', (m, r) => {
      seen.push({ proto: 'udp', q: dnsPacket.decode(m) });
      udp.send(answerFor(m, !!opts.truncateUdp), r.port, r.address);
    });
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
    const port = udp.address().port;
    const tcp = net.createServer((sock) => {
      sock.on('data', (c) => {
        const m = c.subarray(2, 2 + c.readUInt16BE(0));
        seen.push({ proto: 'tcp', q: dnsPacket.decode(m) });
        const a = answerFor(m, false);
        const len = Buffer.alloc(2);
        len.writeUInt16BE(a.length);
        sock.end(Buffer.concat([len, a]));
      });
    });
    try {
      await new Promise<void>((resolve, reject) => { tcp.once('error', reject); tcp.listen(port, '127.0.0.1', resolve); });
    } catch (err) {
      udp.close();
      if (attempt < 4) continue;
      throw err;
    }
    cleanups.push(() => new Promise<void>((r) => udp.close(() => r())));
    cleanups.push(() => new Promise<void>((r) => tcp.close(() => r())));
    return { addr: `127.0.0.1:${port}`, seen };
  }
}

test('A record for a known name over UDP and TCP', async () => {
  const s = await server();
  for (const res of [await askUdp(s.port, query('web')), await askTcp(s.port, query('web'))]) {
    assert.equal(res.id, 4242);
    assert.equal(res.rcode, 'NOERROR');
    assert.equal(res.flag_rd, true);
    assert.deepEqual(res.answers!.map((a) => [a.type, a.name, (a as dnsPacket.StringAnswer).data, (a as dnsPacket.StringAnswer).ttl]),
      [['A', 'web', '172.19.0.2', 600]]);
  }
});

test('names are matched case-insensitively and the question is echoed as asked', async () => {
  const s = await server();
  const res = await askUdp(s.port, query('WeB-Alias.'));
  assert.equal(res.answers!.length, 1);
  assert.equal((res.answers![0] as dnsPacket.StringAnswer).data, '172.19.0.2');
  assert.equal(res.questions![0].name, 'WeB-Alias');
});

test('AAAA for a known IPv4-only name is NOERROR with no answers, not forwarded', async () => {
  const up = await upstream();
  const s = await server({ upstreams: () => [up.addr] });
  const res = await askUdp(s.port, query('web', 'AAAA'));
  assert.equal(res.rcode, 'NOERROR');
  assert.deepEqual(res.answers, []);
  assert.equal(up.seen.length, 0);
});

test('unknown names are forwarded and the upstream answer relayed with the client id', async () => {
  const up = await upstream();
  const s = await server({ upstreams: () => [up.addr] });
  const res = await askUdp(s.port, query('example.com', 'A', 777));
  assert.equal(res.id, 777);
  assert.equal(res.rcode, 'NOERROR');
  assert.equal((res.answers![0] as dnsPacket.StringAnswer).data, '93.184.216.34');
  assert.deepEqual(up.seen.map((x) => [x.proto, x.q.questions![0].name]), [['udp', 'example.com']]);

  // A TCP client is forwarded over TCP.
  const viaTcp = await askTcp(s.port, query('example.org', 'A', 778));
  assert.equal(viaTcp.id, 778);
  assert.equal(up.seen.at(-1)!.proto, 'tcp');
});

test('a truncated upstream UDP answer is fetched again over TCP', async () => {
  const up = await upstream({ truncateUdp: true });
  const s = await server({ upstreams: () => [up.addr] });
  const res = await askUdp(s.port, query('big.example.com'));
  assert.equal(res.flag_tc, false);
  assert.equal(res.answers!.length, 1);
  assert.deepEqual(up.seen.map((x) => x.proto), ['udp', 'tcp']);
});

test('upstreams are tried in order; the upstreams function is read per query', async () => {
  const up = await upstream();
  const silent = udpSocket(); // bound but never answers: a black hole
  await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
  let list = [`127.0.0.1:${silent.address().port}`, up.addr];
  const s = await server({ upstreams: () => list });
  assert.equal((await askUdp(s.port, query('example.com'))).rcode, 'NOERROR');
  list = [];
  assert.equal((await askUdp(s.port, query('example.com'))).rcode, 'SERVFAIL');
});

test('SERVFAIL within the deadline when every upstream is down or none is set', async () => {
  const silent = udpSocket();
  await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
  const s = await server({ upstreams: () => [`127.0.0.1:${silent.address().port}`], upstreamTimeoutMs: 100 });
  const t0 = Date.now();
  const res = await askUdp(s.port, query('nowhere.example', 'A', 99), 1000);
  assert.equal(res.rcode, 'SERVFAIL');
  assert.equal(res.id, 99);
  assert.ok(Date.now() - t0 < 900, 'answered within the deadline');

  const none = await server();
  assert.equal((await askTcp(none.port, query('nowhere.example'))).rcode, 'SERVFAIL');
});

test('garbage is dropped and the server keeps answering', async () => {
  const s = await server();
  const sock = udpSocket();
  sock.send(Buffer.from('definitely not dns'), s.port, '127.0.0.1');
  sock.send(Buffer.from([1, 2, 3]), s.port, '127.0.0.1');
  const tcpJunk = net.connect(s.port, '127.0.0.1');
  cleanups.push(() => { tcpJunk.destroy(); });
  tcpJunk.write(Buffer.from([0, 5, 1, 2, 3, 4, 5]));
  // A response packet is not a query: also ignored, not answered.
  sock.send(dnsPacket.encode({ type: 'response', id: 1, questions: [{ type: 'A', name: 'web' }] }), s.port, '127.0.0.1');
  await assert.rejects(askUdp(s.port, Buffer.from('junk'), 200), /no UDP answer/);
  assert.equal((await askUdp(s.port, query('web'))).answers!.length, 1);
  assert.equal((await askTcp(s.port, query('web'))).answers!.length, 1);
});

test('PTR answered from reverse; unknown addresses forwarded', async () => {
  const up = await upstream();
  const s = await server({ upstreams: () => [up.addr] });
  const res = await askUdp(s.port, query('2.0.19.172.in-addr.arpa', 'PTR'));
  assert.equal(res.rcode, 'NOERROR');
  assert.deepEqual(res.answers!.map((a) => [a.type, (a as dnsPacket.StringAnswer).data]), [['PTR', 'web.mynet']]);
  assert.equal(up.seen.length, 0);
  await askUdp(s.port, query('9.0.19.172.in-addr.arpa', 'PTR'));
  assert.equal(up.seen.length, 1);
});

test('only the first of several questions is answered', async () => {
  const s = await server();
  const msg = dnsPacket.encode({ type: 'query', id: 5, questions: [{ type: 'A', name: 'web' }, { type: 'A', name: 'other' }] });
  const res = await askUdp(s.port, msg);
  assert.deepEqual(res.questions!.map((q) => q.name), ['web']);
  assert.equal(res.answers!.length, 1);
});

test('resolvConfNameservers keeps real nameservers, skipping loopback ones and comments', () => {
  const text = [
    '# generated',
    'nameserver 127.0.0.53',
    'nameserver 10.0.0.2 # office',
    'search corp.example',
    '; nameserver 9.9.9.9',
    '  nameserver\t2001:4860:4860::8888',
    'nameserver ::1',
    'nameserver not-an-ip',
    'options ndots:2',
    'nameserver 1.1.1.1',
  ].join('\n');
  assert.deepEqual(resolvConfNameservers(text), ['10.0.0.2', '2001:4860:4860::8888', '1.1.1.1']);
  assert.deepEqual(resolvConfNameservers(''), []);
});
