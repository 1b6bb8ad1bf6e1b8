process.env.DOCKER_HOST = 'unix:///tmp/man/e.sock';
process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
const { GenericContainer } = await import('testcontainers');
const started = await new GenericContainer('engine-test/busybox').withCommand(['sh', '-c', 'echo tc-ready; sleep 300']).withNetworkMode('none').start();
const res = await started.exec(['echo', 'tc-exec']);
console.log(res.output);
await started.stop();
