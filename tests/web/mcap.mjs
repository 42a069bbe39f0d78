// MCAP recordings of a real stack read back with npm's @mcap/core (fzstd for
// zstd): a 10 s (sim) recording through the indexed reader (every message,
// log-time order, schemas, chunk and message indexes, statistics) and the
// streaming reader (CRCs); a topics filter; --data_dir confinement; and a
// recording cut by SIGKILL of pa-netgw, readable up to its last chunk.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { McapIndexedReader, McapStreamReader } from "@mcap/core";
import { decompress } from "fzstd";
import { spawnSync } from "node:child_process";
import { Stack, binDir, run, sleep, waitFor } from "./foxglove_stack.mjs";

const handlers = { zstd: (d, n) => decompress(d, new Uint8Array(Number(n))) };
let stack;

function readable(buf) {
  return { size: async () => BigInt(buf.length),
    read: async (o, n) => buf.subarray(Number(o), Number(o + n)) };
}

// Every record of a file, streamed: { messages, schemas, channels, footer }.
function stream(buf) {
  const r = new McapStreamReader({ decompressHandlers: handlers, validateCrcs: true });
  r.append(buf);
  const out = { messages: [], schemas: new Map(), channels: new Map(), footer: false, chunks: 0 };
  for (let rec; (rec = r.nextRecord());) {
    if (rec.type === "Message") out.messages.push(rec);
    else if (rec.type === "Schema") out.schemas.set(rec.id, rec);
    else if (rec.type === "Channel") out.channels.set(rec.id, rec);
    else if (rec.type === "Footer") out.footer = true;
  }
  out.done = r.done();
  return out;
}

async function recordingDone(j) {
  return !(await j.ok("foxglove_info")).recording;
}

const tests = {
  async start() {
    stack = await Stack.start();
  },

  async record_10_s_and_read_back() {
    const j = stack.json;
    await j.ok("set_time_scale", { scale: 5 }, "sim_control");
    const rec = await j.ok("record_mcap", { path: "run.mcap", seconds: 10 });
    assert.equal(rec.path, path.join(fs.realpathSync(stack.dataDir), "run.mcap"));
    // commands during the recording land in /commands
    for (let i = 0; i < 5; i++) {
      await j.ok("set_velocity", { robot: 0, v: 0.3, w: 0.2 * i });
      await sleep(100);
    }
    await waitFor(() => recordingDone(j), 20000, "the recording's 10 s");
    await j.ok("set_time_scale", { scale: 1 }, "sim_control");
    const buf = fs.readFileSync(rec.path);
    const r = await McapIndexedReader.Initialize({ readable: readable(buf),
      decompressHandlers: handlers });
    const topics = new Map([...r.channelsById.values()].map((c) => [c.topic, c]));
    for (const [t, s] of [["/map", "foxglove.Grid"], ["/tf", "foxglove.FrameTransforms"],
      ["/scene", "foxglove.SceneUpdate"], ["/robot0/scan", "foxglove.LaserScan"],
      ["/robot0/odom", "nav_msgs/Odometry"], ["/robot0/camera", "foxglove.CompressedImage"],
      ["/commands", "playarea.Command"]]) {
      const ch = topics.get(t);
      assert.ok(ch, `channel ${t}`);
      const schema = r.schemasById.get(ch.schemaId);
      assert.equal(schema.name, s);
      assert.equal(schema.encoding, "jsonschema");
      assert.equal(ch.messageEncoding, "json");
      JSON.parse(new TextDecoder().decode(schema.data));
    }
    let n = 0, last = -1n;
    const per = new Map();
    for await (const m of r.readMessages()) {
      assert.ok(m.logTime >= last, "log-time order");
      last = m.logTime;
      n++;
      const t = r.channelsById.get(m.channelId).topic;
      per.set(t, (per.get(t) || 0) + 1);
      JSON.parse(new TextDecoder().decode(m.data));
    }
    const stats = r.statistics;
    assert.equal(BigInt(n), stats.messageCount);
    for (const [id, c] of stats.channelMessageCounts)
      assert.equal(BigInt(per.get(r.channelsById.get(id).topic) || 0), c);
    assert.ok(r.chunkIndexes.length >= 2, `${r.chunkIndexes.length} chunks`);
    for (const ci of r.chunkIndexes) {
      assert.equal(ci.compression, "zstd");
      assert.ok(ci.messageIndexOffsets.size > 0);
    }
    const span = Number(stats.messageEndTime - stats.messageStartTime) / 1e9;
    assert.ok(span > 9 && span < 10.5, `span ${span} s of sim time`);
    // 50 Hz state, 10 Hz scans over 10 s (a little slack for the edges)
    assert.ok(per.get("/tf") > 400, `tf ${per.get("/tf")}`);
    assert.ok(per.get("/robot0/scan") > 80, `scan ${per.get("/robot0/scan")}`);
    assert.ok(per.get("/commands") >= 5, `commands ${per.get("/commands")}`);
    const cmd = [];
    for await (const m of r.readMessages({ topics: ["/commands"] }))
      cmd.push(JSON.parse(new TextDecoder().decode(m.data)));
    assert.ok(cmd.every((c) => c.op === 1 && c.robot === 0), JSON.stringify(cmd[0]));
    // a time range query uses the chunk indexes
    let inRange = 0;
    const mid = stats.messageStartTime + 4_000_000_000n;
    for await (const m of r.readMessages({ startTime: mid, endTime: mid + 1_000_000_000n })) {
      assert.ok(m.logTime >= mid && m.logTime <= mid + 1_000_000_000n);
      inRange++;
    }
    assert.ok(inRange > 0 && inRange < n / 5, `${inRange} of ${n} in 1 s`);
    // the streaming reader (CRCs checked) sees the same messages and a footer
    const s = stream(buf);
    assert.ok(s.footer && s.done);
    assert.equal(s.messages.length, n);
  },

  async topics_filter_and_bad_input() {
    const j = stack.json;
    const rec = await j.ok("record_mcap", { path: "scan.mcap", topics: ["/robot0/scan", "/t*"] });
    await sleep(800);
    const st = await j.ok("stop_record_mcap");
    assert.equal(st.path, rec.path);
    assert.ok(st.messages > 0);
    const s = stream(fs.readFileSync(rec.path));
    const topics = new Set([...s.channels.values()].map((c) => c.topic));
    assert.deepEqual([...topics].sort(), ["/robot0/scan", "/tf"]);
    const fails = [
      [{ path: "../escape.mcap" }, /'\.\.' is not allowed/],
      [{ path: "/tmp/abs.mcap" }, /outside the data directory/],
      [{ path: "a.txt" }, /must end in \.mcap/],
      [{ path: "scan.mcap" }, /exists/],
      [{ path: "nodir/x.mcap" }, /directory/],
      [{ path: "y.mcap", seconds: -1 }, /seconds/],
      [{ path: "y.mcap", topics: [] }, /topics/],
    ];
    for (const [data, re] of fails) {
      const r = await j.req("record_mcap", data);
      assert.equal(r.type, "error", JSON.stringify(data));
      assert.match(r.error.message, re);
    }
    assert.ok(!fs.existsSync(path.join(stack.dataDir, "y.mcap")));
    const r = await j.req("stop_record_mcap");
    assert.match(r.error.message, /no recording/);
  },

  // Lockstep (paused, stepped) recording from a reset: replay_mcap re-runs
  // its /commands and reaches the recorded end state to the bit; a
  // free-running recording does not, and replay says so.
  async replay_matches_in_lockstep() {
    const j = stack.json;
    await j.ok("pause", {}, "sim_control");
    const rec = await j.ok("record_mcap", { path: "lockstep.mcap" });
    await j.ok("reset", {}, "sim_control");
    for (let i = 0; i < 20; i++)
      await j.ok("step", { robot: 0, steps: 7, v: 0.4, w: 0.3 * Math.sin(i) });
    await j.ok("set_pose", { robot: 0, pose: [0.5, -0.2, 1.0] });
    // step_batch's velocities go packed (SET_CMDS): recorded one by one
    await j.ok("step_batch", { robots: [0], actions: [[0.3, -0.2]], steps: 9 });
    await j.ok("step_n", { steps: 13 }, "sim_control");
    const end = await j.ok("get_state", { robot: 0 });
    await j.ok("stop_record_mcap");
    // move away, then replay
    await j.ok("step", { robot: 0, steps: 50, v: 0.5, w: -0.5 });
    const r = await j.ok("replay_mcap", { path: "lockstep.mcap" });
    assert.equal(r.path, rec.path);
    assert.ok(r.commands >= 25, `${r.commands} commands`);
    const done = await waitFor(async () => {
      const i = (await j.ok("foxglove_info")).replay;
      return i && i.state !== "running" && i;
    }, 20000, "the replay");
    assert.equal(done.state, "match", JSON.stringify(done));
    assert.equal(done.errors, 0);
    const again = await j.ok("get_state", { robot: 0 });
    assert.deepEqual(again.pose, end.pose);
    // the same through the launcher's `playarea replay FILE`
    await j.ok("step", { robot: 0, steps: 30, v: -0.3, w: 0.5 });
    const cli = spawnSync(path.join(binDir(), "playarea"),
      ["replay", "lockstep.mcap", "--tcp_port", String(stack.port)], { encoding: "utf8" });
    assert.equal(cli.status, 0, cli.stdout + cli.stderr);
    assert.match(cli.stdout, /^match: /m);
    // free-running: a velocity held for wall time, no steps to replay it
    await j.ok("resume", {}, "sim_control");
    await j.ok("record_mcap", { path: "free.mcap" });
    await j.ok("set_velocity", { robot: 0, v: 0.4, w: 0.1 });
    await sleep(500);
    await j.ok("stop", { robot: 0 });
    await sleep(100);
    await j.ok("stop_record_mcap");
    await j.ok("set_pose", { robot: 0, pose: [0, 0, 0] });
    await j.ok("replay_mcap", { path: "free.mcap" });
    const bad = await waitFor(async () => {
      const i = (await j.ok("foxglove_info")).replay;
      return i && i.state !== "running" && i;
    }, 20000, "the second replay");
    assert.equal(bad.state, "mismatch", JSON.stringify(bad));
    assert.match(bad.detail, /recorded .* replayed/);
    await j.ok("set_pose", { robot: 0, pose: [0, 0, 0] });
    const cli2 = spawnSync(path.join(binDir(), "playarea"),
      ["replay", "free.mcap", "--tcp_port", String(stack.port)], { encoding: "utf8" });
    assert.equal(cli2.status, 1, cli2.stdout + cli2.stderr);
    assert.match(cli2.stdout, /^mismatch: /m);
    const cli3 = spawnSync(path.join(binDir(), "playarea"),
      ["replay", "nothere.mcap", "--tcp_port", String(stack.port)], { encoding: "utf8" });
    assert.equal(cli3.status, 1);
    assert.match(cli3.stderr, /No such file/);
    await j.ok("resume", {}, "sim_control");
    const e1 = await j.req("replay_mcap", { path: "nothere.mcap" });
    assert.match(e1.error.message, /No such file/);
    fs.writeFileSync(path.join(stack.dataDir, "junk.mcap"), "not mcap");
    const e2 = await j.req("replay_mcap", { path: "junk.mcap" });
    assert.match(e2.error.message, /not an MCAP file/);
  },

  // pa-netgw killed mid-recording: the file holds complete chunks only, and
  // a streaming reader reads them all.
  async killed_gateway_leaves_a_readable_file() {
    const j = stack.json;
    const rec = await j.ok("record_mcap", { path: "crash.mcap" });
    await sleep(2500); // a chunk a second
    const pid = Number(fs.readFileSync(`/proc/${stack.proc.pid}/task/${stack.proc.pid}/children`,
      "utf8").trim().split(/\s+/).find((p) => fs.readFileSync(`/proc/${p}/comm`, "utf8")
      .trim() === "pa-netgw"));
    assert.ok(pid > 0);
    process.kill(pid, "SIGKILL");
    await sleep(300);
    const s = stream(fs.readFileSync(rec.path));
    assert.ok(!s.footer, "no footer: the process died");
    assert.ok(s.messages.length > 50, `${s.messages.length} messages`);
    assert.ok(s.schemas.size >= 5 && s.channels.size >= 6);
    // the launcher restarts pa-netgw; the stack serves again
    await waitFor(async () => {
      try {
        const { JsonClient } = await import("./foxglove_stack.mjs");
        stack.json.close();
        stack.json = await JsonClient.connect(stack.port);
        return (await stack.json.ok("foxglove_info")).port > 0;
      } catch { return false; }
    }, 20000, "pa-netgw restarted");
  },

  // --record from the start; SIGTERM of the stack finishes the file.
  async record_flag_until_shutdown() {
    const s2 = await Stack.start("--record", "boot.mcap");
    try {
      await sleep(1500);
      assert.ok((await s2.json.ok("foxglove_info")).recording);
      assert.equal(await s2.stop({ keepDataDir: true }), 0);
      const buf = fs.readFileSync(path.join(s2.dataDir, "boot.mcap"));
      const r = await McapIndexedReader.Initialize({ readable: readable(buf),
        decompressHandlers: handlers });
      assert.ok(r.statistics.messageCount > 20n, `${r.statistics.messageCount} messages`);
      const topics = [...r.channelsById.values()].map((c) => c.topic);
      assert.ok(topics.includes("/state") && topics.includes("/tf"), topics.join());
    } finally {
      await s2.stop();
      fs.rmSync(s2.dataDir, { recursive: true, force: true });
    }
    // a --record path outside --data_dir is a configuration error
    await assert.rejects(Stack.start("--record", "../x.mcap"), /'\.\.' is not allowed/);
  },

  async stop() {
    assert.equal(await stack.stop(), 0);
    assert.equal(stack.report, "", "sanitizer report from the stack");
  },
};

await run(tests);
