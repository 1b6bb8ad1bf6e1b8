// The operator's references, generated from the one option table (./options.ts) that the flag
// parser, the file reader and `engined --help` also use, so they cannot drift from them:
// docs/daemon-json.md (every configuration file key) and the man pages engined(8) and
// daemon.json(5). hack/gen-docs.ts writes them; a unit test checks the committed ones are current.
import { defaultShown } from './flags.ts';
import { OPTIONS, type OptionDef } from './options.ts';

/** The JSON type a file key takes. */
function jsonType(o: OptionDef): string {
  switch (o.type) {
    case 'bool':
      return 'boolean';
    case 'int':
      return 'integer';
    case 'list':
    case 'pool':
    case 'ulimit':
      return 'array';
    case 'map':
    case 'mapmap':
    case 'runtime':
    case 'feature':
    case 'file':
      return 'object';
    default:
      return 'string';
  }
}

/** An example value for a key, as JSON. */
function example(o: OptionDef): string {
  const d = o.default;
  if (d !== '' && d !== null && d !== undefined && !(Array.isArray(d) && d.length === 0) && !(typeof d === 'object' && !Array.isArray(d) && Object.keys(d as object).length === 0)) {
    return JSON.stringify(d);
  }
  switch (jsonType(o)) {
    case 'boolean':
      return 'true';
    case 'integer':
      return '1';
    case 'array':
      return '["…"]';
    case 'object':
      return '{}';
    default:
      return '"…"';
  }
}

const fileOptions = () => OPTIONS.filter((o) => o.fileKey !== null).sort((a, b) => a.fileKey!.localeCompare(b.fileKey!));
const flagOptions = () => OPTIONS.filter((o) => o.cli !== false);

function flagOf(o: OptionDef): string {
  return o.cli === false ? '—' : `\`--${o.name}\`${o.short ? ` (\`-${o.short}\`)` : ''}`;
}

/** docs/daemon-json.md. */
export function daemonJsonDoc(): string {
  const out = [
    '# daemon.json: the daemon\'s configuration file',
    '',
    'Generated from the option table (`config/options.ts`) by `hack/gen-docs.ts`; do not edit by hand.',
    'The file is `/etc/engine/daemon.json` unless `--config-file` names another (rootless mode:',
    '`~/.config/engine/daemon.json`). A key given both here and as a flag refuses the start. Keys marked',
    'reloadable take effect on SIGHUP (`systemctl reload engine`); the others need a restart.',
    '',
    '| Key | Type | Default | Reloadable | Flag | Description |',
    '|---|---|---|---|---|---|',
  ];
  for (const o of fileOptions()) {
    const def = defaultShown(o);
    out.push(`| \`${o.fileKey}\` | ${jsonType(o)} | ${def === '' ? '—' : `\`${def}\``} | ${o.reloadable ? 'yes' : 'no'} | ${flagOf(o)} | ${o.description.replace(/\|/g, '\\|')} |`);
  }
  out.push('', '## Example', '', '```json', '{');
  const some = fileOptions().filter((o) => ['debug', 'log-level', 'data-root', 'storage-driver', 'live-restore', 'features'].includes(o.fileKey!));
  out.push(some.map((o) => `  "${o.fileKey}": ${example(o)}`).join(',\n'));
  out.push('}', '```', '');
  return out.join('\n');
}

const roff = (s: string) => s.replace(/\\/g, '\\e').replace(/-/g, '\\-').replace(/^\./gm, '\\&.');

/** engined(8). */
export function enginedManPage(version: string): string {
  const out = [
    `.TH ENGINED 8 "" "engine ${version}" "System Administration"`,
    '.SH NAME',
    'engined \\- a container engine daemon compatible with the Docker Engine API',
    '.SH SYNOPSIS',
    '.B engined',
    '[\\fIOPTIONS\\fR]',
    '.SH DESCRIPTION',
    'engined runs containers through containerd and an OCI runtime and answers the Docker Engine API on',
    'its sockets. Options may also be set in the configuration file, see \\fBdaemon.json\\fR(5).',
    '.SH OPTIONS',
  ];
  for (const o of flagOptions()) {
    const def = defaultShown(o);
    out.push('.TP', `${o.short ? `\\fB\\-${o.short}\\fR, ` : ''}\\fB${roff(`--${o.name}`)}\\fR`, roff(`${o.description}${def === '' ? '' : ` (default ${def})`}${o.reloadable ? '; reloadable' : ''}`));
  }
  out.push('.SH SIGNALS', 'SIGHUP reloads the configuration file; SIGTERM and SIGINT stop the daemon.', '.SH SEE ALSO', '\\fBdaemon.json\\fR(5)', '');
  return out.join('\n');
}

/** daemon.json(5). */
export function daemonJsonManPage(version: string): string {
  const out = [
    `.TH DAEMON.JSON 5 "" "engine ${version}" "File Formats"`,
    '.SH NAME',
    'daemon.json \\- configuration file of engined',
    '.SH DESCRIPTION',
    'A JSON object; each key sets the option of the same name. Keys marked reloadable take effect on',
    'SIGHUP. A key also given as a flag refuses the start.',
    '.SH KEYS',
  ];
  for (const o of fileOptions()) {
    const def = defaultShown(o);
    out.push('.TP', `\\fB${roff(o.fileKey!)}\\fR (${jsonType(o)})`, roff(`${o.description}${def === '' ? '' : ` (default ${def})`}${o.reloadable ? '; reloadable' : ''}`));
  }
  out.push('.SH FILES', '/etc/engine/daemon.json', '.SH SEE ALSO', '\\fBengined\\fR(8)', '');
  return out.join('\n');
}

/** engine(1): the client's usage text (cmd/engine.ts USAGE, what `engine --help` prints) as it is. */
export function engineManPage(version: string, usage: string): string {
  return [
    `.TH ENGINE 1 "" "engine ${version}" "User Commands"`,
    '.SH NAME',
    'engine \\- the client of engined\'s stack API: apply Compose files as stacks, list and remove them',
    '.SH SYNOPSIS',
    '.B engine',
    '[\\fB\\-H\\fR \\fIHOST\\fR] \\fICOMMAND\\fR',
    '.SH DESCRIPTION',
    'The docker CLI and other Docker Engine API clients work against engined unchanged; engine speaks the',
    'API extensions of engined (stacks kept converged by the daemon). Its commands and options, as',
    '\\fBengine \\-\\-help\\fR prints them:',
    '.PP',
    '.nf',
    roff(usage.trimEnd()),
    '.fi',
    '.SH ENVIRONMENT',
    'ENGINE_HOST, then DOCKER_HOST: the daemon, when \\fB\\-H\\fR is not given.',
    '.SH SEE ALSO',
    '\\fBengined\\fR(8), \\fBdaemon.json\\fR(5)',
    '',
  ].join('\n');
}
