// peer.mjs runs one @qwen-code/sdk/peer PeerEndpoint for the Go harness
// (interop/qwencli). Our own code, not Qwen's: it joins the Qwen home named
// by QWEN_HOME, then speaks JSON lines.
//
//   argv[2]  JSON options: {"name": "...", "kind"?, "cwd"?, "sessionId"?,
//            "socketPath"?, "controllerToken"?, "refuse"?: true}
//            ("refuse" leaves onMessage out, so the SDK answers refused).
//   stdin    one command a line: {"id": 1, "cmd": "send", "to": "...",
//            "content": "...", "fromMode"?, "priority"?, "controller"?}
//            {"id": 2, "cmd": "list"}  {"id": 3, "cmd": "close"}
//   stdout   one event a line: started, message, receipt, error, and
//            result (with the command's id) for every command.
//
// The endpoint's ipcToken is never printed: the harness reads it from the
// record file, like any other peer would.
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';

// An ES module import ignores NODE_PATH; require honours it, and the SDK
// ships a CommonJS build of the same module.
const require = createRequire(import.meta.url);
const { PeerEndpoint, describeSendFailure } = require('@qwen-code/sdk/peer');

const print = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

const opts = JSON.parse(process.argv[2] ?? '{}');
// An option that is null or absent is left to the SDK's default.
const pick = (k) => (opts[k] != null ? { [k]: opts[k] } : {});
let endpoint;
try {
  endpoint = await PeerEndpoint.start({
    name: opts.name,
    ...pick('kind'),
    ...pick('cwd'),
    ...pick('sessionId'),
    ...pick('socketPath'),
    ...pick('controllerToken'),
    ...(opts.refuse ? {} : { onMessage: (m) => print({ event: 'message', ...m }) }),
    onReceipt: (r) => print({ event: 'receipt', ...r }),
    onError: (e) => print({ event: 'error', error: String(e?.message ?? e) }),
  });
} catch (e) {
  print({ event: 'error', error: String(e?.message ?? e), code: e?.code });
  process.exit(1);
}

print({
  event: 'started',
  sessionId: endpoint.sessionId,
  name: endpoint.name,
  ref: endpoint.ref,
  kind: endpoint.kind,
  cwd: endpoint.cwd,
  pid: process.pid,
  ipcPath: endpoint.ipcPath,
  recordPath: endpoint.recordPath,
  registryDir: endpoint.registryDir,
});

async function run(c) {
  switch (c.cmd) {
    case 'send':
      return endpoint.send({
        to: c.to,
        content: c.content,
        ...(c.fromMode != null ? { fromMode: c.fromMode } : {}),
        ...(c.priority != null ? { priority: c.priority } : {}),
        ...(c.controller ? { controller: true } : {}),
      });
    case 'list':
      return endpoint.list();
    case 'close':
      await endpoint.close();
      return null;
    default:
      throw new Error(`unknown command ${JSON.stringify(c.cmd)}`);
  }
}

// Commands run one at a time, in order, so results come back in the order
// they were asked for.
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.trim() === '') continue;
  let c;
  try {
    c = JSON.parse(line);
  } catch (e) {
    print({ event: 'result', error: `bad command line: ${e.message}` });
    continue;
  }
  try {
    const result = await run(c);
    print({ event: 'result', id: c.id, cmd: c.cmd, result });
  } catch (e) {
    print({ event: 'result', id: c.id, cmd: c.cmd, error: describeSendFailure(e), code: e?.code });
  }
  if (c.cmd === 'close') break;
}
await endpoint.close();
process.exit(0);
