// The real playarea stack for the Foxglove and MCAP tests: one launcher on
// OS-picked ports (TCP 0, Foxglove -1), a JSON-lines client, a Foxglove
// client on either subprotocol. Everything started is stopped on exit, even
// on failure; shm objects and temp dirs of the test's instance are removed.
import { spawn } from "node:child_process";
import dgram from "node:dgram";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fox from "@foxglove/ws-protocol";
import WebSocket from "ws";

const { FoxgloveClient } = fox;
const here = path.dirname(fileURLToPath(import.meta.url));
const SLOW = Number(process.env.PA_TEST_SLOW || 1);
const live = new Set();
let counter = 0;

export function binDir() {
  return path.resolve(process.env.PA_BIN_DIR || path.join(here, "..", "..", "build", "bin"));
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls fn until it returns a truthy value or ms pass (scaled for sanitizers).
export async function waitFor(fn, ms, what) {
  const end = Date.now() + ms * SLOW;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function killAll() {
  for (const s of live) s.kill("SIGKILL");
}
process.on("exit", killAll);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { killAll(); process.exit(1); });

export class Stack {
  // Starts `playarea` with args; resolves once its ready line is out.
  static async start(...args) {
    const s = new Stack();
    s.instance = `t${process.pid}-fox-${++counter}`;
    s.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${s.instance}-`));
    s.log = "";
    const exe = path.join(binDir(), "playarea");
    // SSL vision goes to a port this test holds, never to a user's 10020.
    s.vision = dgram.createSocket("udp4");
    await new Promise((r) => s.vision.bind(0, "127.0.0.1", r));
    s.proc = spawn(exe, ["--tcp_port", "0", "--foxglove_port", "-1", "--instance", s.instance,
      "--data_dir", s.dataDir, "--ssl_vision_port", String(s.vision.address().port), ...args], {
      stdio: ["ignore", "pipe", "pipe"], detached: true,
      env: { LIBGL_ALWAYS_SOFTWARE: "1", ...process.env },
    });
    live.add(s);
    s.proc.stderr.on("data", (d) => { s.log += d.toString(); });
    try {
      s.port = await new Promise((resolve, reject) => {
        let out = "";
        const t = setTimeout(() => reject(new Error(`playarea not ready:\n${s.log}`)), 60000 * SLOW);
        s.proc.stdout.on("data", (d) => {
          out += d.toString();
          const m = out.match(/^tcp (\S+):(\d+) instance (\S+)\n/);
          if (m) { clearTimeout(t); resolve(Number(m[2])); }
        });
        s.proc.on("exit", (c) => { clearTimeout(t); reject(new Error(`playarea exited ${c}:\n${s.log}`)); });
      });
      s.json = await JsonClient.connect(s.port);
      const t = args.indexOf("--token");
      if (t >= 0) await s.json.ok("auth", { token: args[t + 1] });
      const info = await s.json.ok("foxglove_info");
      s.foxPort = info.port;
      if (!s.foxPort) throw new Error("no Foxglove port in foxglove_info");
    } catch (e) {
      await s.stop();
      throw e;
    }
    return s;
  }

  kill(sig) {
    try { process.kill(-this.proc.pid, sig); } catch { /* gone */ }
  }

  // SIGTERM, SIGKILL after 20 s; shm objects and the data dir removed.
  async stop({ keepDataDir = false } = {}) {
    if (!live.has(this)) return this.exitCode;
    this.json?.close();
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const done = new Promise((r) => this.proc.once("exit", r));
      this.kill("SIGTERM");
      const t = setTimeout(() => this.kill("SIGKILL"), 20000);
      await done;
      clearTimeout(t);
    }
    this.kill("SIGKILL");
    this.vision?.close();
    this.vision = null;
    this.exitCode = this.proc.exitCode;
    // a sanitizer build's reports, from any process of the stack
    const at = this.log.search(/ERROR: (Address|Leak|Thread)Sanitizer|runtime error:/);
    this.report = at >= 0 ? this.log.slice(at, at + 4000) : "";
    live.delete(this);
    for (const n of fs.readdirSync("/dev/shm"))
      if (n.startsWith(`playarea.${this.instance}.`)) fs.rmSync(path.join("/dev/shm", n), { force: true });
    if (!keepDataDir) fs.rmSync(this.dataDir, { recursive: true, force: true });
    return this.exitCode;
  }

  // A Foxglove client on subprotocol proto, after serverInfo, advertise and
  // advertiseServices arrived.
  async fox(proto = "foxglove.websocket.v1") {
    const ws = new WebSocket(`ws://127.0.0.1:${this.foxPort}`, [proto]);
    const c = new FoxgloveClient({ ws });
    const st = { ws, c, channels: new Map(), services: new Map(), statuses: [], times: [],
      msgs: [], subs: new Map() };
    c.on("serverInfo", (i) => { st.info = i; });
    c.on("advertise", (chs) => { for (const ch of chs) st.channels.set(ch.id, ch); });
    c.on("unadvertise", (ids) => { for (const id of ids) st.channels.delete(id); });
    c.on("advertiseServices", (ss) => { for (const s of ss) st.services.set(s.name, s); });
    c.on("status", (s) => st.statuses.push(s));
    c.on("time", (t) => st.times.push(t.timestamp));
    c.on("message", (m) => st.msgs.push({ topic: st.subs.get(m.subscriptionId), t: m.timestamp,
      json: () => JSON.parse(new TextDecoder().decode(m.data)), bytes: m.data.byteLength, raw: m.data }));
    st.topic = (name) => [...st.channels.values()].find((ch) => ch.topic === name);
    st.subscribe = (name) => {
      const ch = st.topic(name);
      if (!ch) throw new Error(`no channel ${name}`);
      const id = c.subscribe(ch.id);
      st.subs.set(id, name);
      return id;
    };
    st.unsubscribe = (id) => { c.unsubscribe(id); st.subs.delete(id); };
    st.close = () => c.close();
    await waitFor(() => st.info && st.services.size && st.topic("/map"), 10000, "serverInfo/advertise");
    return st;
  }
}

// JSON lines on the TCP control port: one request at a time.
export class JsonClient {
  static connect(port) {
    return new Promise((resolve, reject) => {
      const j = new JsonClient();
      j.sock = net.createConnection({ host: "127.0.0.1", port }, () => resolve(j));
      j.sock.on("error", reject);
      j.buf = "";
      j.waiting = [];
      j.sock.on("data", (d) => {
        j.buf += d.toString();
        let i;
        while ((i = j.buf.indexOf("\n")) >= 0) {
          const line = j.buf.slice(0, i);
          j.buf = j.buf.slice(i + 1);
          j.waiting.shift()?.(JSON.parse(line));
        }
      });
    });
  }

  req(action, data = {}, type = "command") {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.sock.write(JSON.stringify({ type, protocol_version: 2, action, data }) + "\n");
    });
  }

  // The reply's data; throws with the error when it was one.
  async ok(action, data = {}, type = "command") {
    const r = await this.req(action, data, type);
    if (r.type === "error") throw new Error(`${action}: ${r.error.code}: ${r.error.message}`);
    return r.data;
  }

  close() { this.sock.destroy(); }
}

// Runs the named async test functions in order; exits non-zero on the first
// failure after stopping every stack.
export async function run(tests) {
  let failed = 0;
  for (const [name, fn] of Object.entries(tests)) {
    const t0 = Date.now();
    try {
      await fn();
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: ${e.stack || e}`);
    }
  }
  for (const s of [...live]) {
    await s.stop();
    if (s.report) {
      failed++;
      console.log(`FAIL sanitizer report from ${s.instance}:\n${s.report}`);
    }
  }
  process.exit(failed ? 1 : 0);
}
