// --token on the Foxglove port, tried with the official client
// (@foxglove/ws-protocol over `ws`) as Foxglove and Lichtblick users connect:
// no token is refused with 401 before any message; the token in the URL as
// typed (ws://host:port/?token=...) or as an Authorization: Bearer header is
// served; a wrong one is refused.
import assert from "node:assert/strict";
import fox from "@foxglove/ws-protocol";
import WebSocket from "ws";
import { Stack, run, waitFor } from "./foxglove_stack.mjs";

const { FoxgloveClient } = fox;
const TOKEN = "s3cret";
let stack;

// Connects as the official client does; resolves with serverInfo, or with
// the HTTP status of a refused upgrade.
function connect(query, headers = {}) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${stack.foxPort}/${query}`,
      [FoxgloveClient.SUPPORTED_SUBPROTOCOL], { headers });
    const c = new FoxgloveClient({ ws });
    ws.on("unexpected-response", (req, res) => resolve({ status: res.statusCode }));
    c.on("serverInfo", (info) => { resolve({ info }); c.close(); });
    c.on("error", () => {});
  });
}

const tests = {
  async start() {
    stack = await Stack.start("--no-render", "--token", TOKEN);
  },

  async refusedWithoutToken() {
    assert.deepEqual(await connect(""), { status: 401 });
    assert.deepEqual(await connect("?token=nope"), { status: 401 });
    assert.deepEqual(await connect("", { Authorization: "Bearer nope" }), { status: 401 });
  },

  async servedWithToken() {
    const a = await connect(`?token=${TOKEN}`);
    assert.equal(a.info?.name, "playarea");
    const b = await connect("", { Authorization: `Bearer ${TOKEN}` });
    assert.equal(b.info?.name, "playarea");
    const m = await stack.json.ok("foxglove_info");
    assert.ok(m.clients >= 0);
    await waitFor(async () => (await stack.json.ok("foxglove_info")).clients === 0, 5000,
      "clients gone");
  },

  async stop() {
    assert.equal(await stack.stop(), 0);
    assert.equal(stack.report, "", "sanitizer report from the stack");
  },
};

await run(tests);
