// Execs as records owned by their container (issue 58, 1), through real clients: container
// inspect's ExecIDs lists the execs not yet ended (created and running), inspect and resize answer
// as the reference, and execs do not outlive the daemon: after a restart, or a kill -9, inspect and
// start of an old exec answer 404 "No such exec instance".
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dockerode, pythonDocker } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

describe('execs', () => {
  let d: DaemonHandle;
  let img = '';

  before(async () => {
    const s = await startWithImages();
    d = s.d;
    img = s.imgs.tag;
  });
  after(() => removeAllAndCleanup(d));

  test('docker-py: ExecIDs lists created and running execs, not ended ones; inspect and resize answer as the reference', async () => {
    const out = await pythonDocker(d, `
      import time
      c = api.create_container('${img}', ['sleep', '300'], name='ex1')
      api.start(c)
      assert api.inspect_container(c)['ExecIDs'] is None
      created = api.exec_create(c, ['true'])['Id']
      running = api.exec_create(c, ['sleep', '300'], tty=True)['Id']
      ended = api.exec_create(c, ['sh', '-c', 'exit 4'])['Id']
      api.exec_start(running, detach=True, tty=True)
      api.exec_start(ended)
      for _ in range(50):
          if not api.exec_inspect(ended)['Running']:
              break
          time.sleep(0.1)
      ids = api.inspect_container(c)['ExecIDs']
      print(sorted(ids) == sorted([created, running]))
      i = api.exec_inspect(running)
      print(i['Running'], i['Pid'] > 0, i['ProcessConfig']['entrypoint'], i['ProcessConfig']['tty'], i['ContainerID'] == c['Id'])
      e = api.exec_inspect(ended)
      print(e['Running'], e['ExitCode'], e['Pid'] > 0)
      api.exec_resize(running, height=30, width=100)
      try:
          api.exec_resize(ended, height=30, width=100)
      except docker.errors.APIError as err:
          print(err.response.status_code, err.explanation)
      try:
          api.exec_start(ended)
      except docker.errors.APIError as err:
          print(err.response.status_code, err.explanation)
      print(json.dumps([created, running, ended]))
    `);
    const lines = out.trim().split('\n');
    assert.deepEqual(lines.slice(0, -1), [
      'True',
      'True True sleep True True',
      'False 4 True',
      `409 Exec ${JSON.parse(lines.at(-1)!)[2]} is not running, so it can not be resized.`,
      `409 exec command ${JSON.parse(lines.at(-1)!)[2]} has already run`,
    ]);
    const [created, running, ended] = JSON.parse(lines.at(-1)!) as string[];

    // A kill -9 and a start: no exec of the earlier daemon is left, for inspect or start (dockerode).
    await d.stop({ signal: 'SIGKILL' });
    await d.restart();
    const api = dockerode(d);
    for (const id of [created!, running!, ended!]) {
      await assert.rejects(api.getExec(id).inspect(), (err: { statusCode?: number; json?: { message?: string } }) => err.statusCode === 404 && err.json?.message === `No such exec instance: ${id}`);
      await assert.rejects(api.getExec(id).start({ Detach: true }), (err: { statusCode?: number }) => err.statusCode === 404);
    }
    // Its container lists none of them.
    assert.equal((await api.getContainer('ex1').inspect()).ExecIDs, null);
  });
});
