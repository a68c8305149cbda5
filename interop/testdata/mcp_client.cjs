// An independent MCP client of the gateway: the TypeScript SDK over
// Streamable HTTP with a bearer token. It prints one JSON object with what
// each step saw; the Go test (mcp_ts_test.go) checks it.
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const url = process.env.GATEWAY_MCP_URL;

async function connect(token, name) {
  const t = new StreamableHTTPClientTransport(new URL(url + '?name=' + name), {
    requestInit: { headers: token ? { Authorization: 'Bearer ' + token } : {} },
  });
  const c = new Client({ name: 'ts-' + name, version: '1.0.0' });
  await c.connect(t);
  return { c, t };
}

// call returns the tool's text and whether it is an error, or the thrown
// protocol error's message.
async function call(c, name, args) {
  try {
    const r = await c.callTool({ name, arguments: args });
    return { isError: !!r.isError, text: r.content.map((x) => x.text).join('') };
  } catch (e) {
    return { thrown: true, code: e.code, text: String(e.message) };
  }
}

(async () => {
  const out = {};
  try {
    await connect('', 'anonymous');
    out.anonymous = 'connected';
  } catch (e) {
    out.anonymous = 'refused: ' + e.message;
  }

  const limited = await connect(process.env.TOKEN_LIMITED, 'ts-limited');
  out.limitedAnswer = await call(limited.c, 'answer_permission_request', { id: process.env.PROMPT_ID, behavior: 'allow' });
  await limited.t.terminateSession();
  await limited.c.close();

  const full = await connect(process.env.TOKEN_FULL, 'ts-full');
  out.tools = (await full.c.listTools()).tools.map((t) => ({ name: t.name, hasSchema: !!t.inputSchema, description: t.description }));
  out.sessions = await call(full.c, 'list_sessions', {});
  out.send = await call(full.c, 'send_message', { to: 'build-bot', text: process.env.SEND_TEXT });
  out.missingArgs = await call(full.c, 'send_message', {});
  out.wrongType = await call(full.c, 'wait_for_messages', { timeout_seconds: 'soon' });
  out.unknownTool = await call(full.c, 'no_such_tool', {});
  out.answer = await call(full.c, 'answer_permission_request', { id: process.env.PROMPT_ID, behavior: 'allow' });
  await full.t.terminateSession();
  await full.c.close();
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch((e) => {
  process.stderr.write('mcp_client: ' + (e.stack || e) + '\n');
  process.exit(1);
});
