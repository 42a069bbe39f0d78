// Lockstep MCAP recordings hold every tick (issue 35): paused, record_mcap,
// reset, then 400 single-tick steps sent back to back; the file read back
// with npm's @mcap/core has one /tf and one /robot0/odom per tick stepped
// (distinct, in order) and every scan pa-sim produced in those ticks.
import assert from "node:assert/strict";
import fs from "node:fs";
import { McapIndexedReader } from "@mcap/core";
import { decompress } from "fzstd";
import { Stack, run, sleep, waitFor } from "./foxglove_stack.mjs";

const handlers = { zstd: (d, n) => decompress(d, new Uint8Array(Number(n))) };
const STEPS = 400;
let stack;

async function readAll(file) {
  const buf = fs.readFileSync(file);
  const r = await McapIndexedReader.Initialize({ decompressHandlers: handlers,
    readable: { size: async () => BigInt(buf.length),
      read: async (o, n) => buf.subarray(Number(o), Number(o + n)) } });
  const per = new Map();
  for await (const m of r.readMessages()) {
    const t = r.channelsById.get(m.channelId).topic;
    if (!per.has(t)) per.set(t, []);
    per.get(t).push({ log: m.logTime, data: JSON.parse(new TextDecoder().decode(m.data)) });
  }
  return per;
}

function distinctIncreasing(list, what) {
  for (let i = 1; i < list.length; i++)
    assert.ok(list[i].log > list[i - 1].log, `${what}: message ${i} not after ${i - 1}`);
}

const tests = {
  async start() {
    stack = await Stack.start("--scan_hz", "20");
    // pa-render draws before the lockstep test starts: its EGL start can
    // take longer than 400 steps on a busy machine (CI saw a recording with
    // no camera frame at all).
    const j = stack.json;
    await waitFor(async () => {
      const r = await j.ok("record_mcap", { path: `warm${Date.now()}.mcap`, topics: ["/robot0/camera"] });
      await sleep(300);
      await j.ok("stop_record_mcap");
      return ((await readAll(r.path)).get("/robot0/camera") || []).length > 0;
    }, 30000, "pa-render's first camera frame");
  },

  async lockstep_400_back_to_back_ticks_all_recorded() {
    const j = stack.json;
    await j.ok("pause", {}, "sim_control");
    const rec = await j.ok("record_mcap", { path: "lock.mcap" });
    const jpeg0 = (await j.ok("foxglove_info")).jpeg_frames;
    await j.ok("reset", {}, "sim_control");
    const t0 = (await j.ok("get_state", { robot: 0 })).tick;
    // back to back: several steps in flight at once, each one tick
    const inflight = [];
    for (let i = 0; i < STEPS; i++) {
      inflight.push(j.ok("step", { robot: 0, steps: 1, v: 0.3, w: 0.1 }));
      if (inflight.length >= 8) await inflight.shift();
    }
    await Promise.all(inflight);
    const t1 = (await j.ok("get_state", { robot: 0 })).tick;
    assert.equal(t1 - t0, STEPS, `ticks ${t0}..${t1}`);
    // pa-render draws at --camera_hz in wall time, and 400 steps can take
    // less than one of its periods: the recording runs until the recorder
    // has taken a camera frame (CI saw none in a 1.75 s run at load)
    await waitFor(async () => (await j.ok("foxglove_info")).jpeg_frames > jpeg0,
      10000, "a camera frame while recording");
    const st = await j.ok("stop_record_mcap");
    assert.equal(st.dropped, 0);
    const per = await readAll(rec.path);
    const tf = per.get("/tf") || [], odom = per.get("/robot0/odom") || [];
    const scan = per.get("/robot0/scan") || [];
    // the stepped ticks' state: each exactly once, after the state of the
    // tick before them (the pause's, the reset's: a command that changes the
    // poses at a tick is recorded too)
    const dt = Number(tf[tf.length - 1].log - tf[tf.length - 2].log) / 1e9;
    const first = tf[tf.length - 1].log - BigInt(Math.round((STEPS - 1) * dt * 1e9));
    const stepped = (l) => l.filter((m) => m.log >= first);
    assert.equal(stepped(tf).length, STEPS, `/tf ${stepped(tf).length} of ${STEPS} (${tf.length} in all)`);
    assert.equal(stepped(odom).length, STEPS, `odom ${stepped(odom).length} of ${STEPS}`);
    distinctIncreasing(stepped(tf), "/tf");
    distinctIncreasing(stepped(odom), "/robot0/odom");
    // scans: pa-sim's --scan_hz 20 over the stepped sim time, each once (a
    // command at the paused tick before them may republish that tick's scan)
    const want = Math.floor(STEPS * dt * 20 + 1e-6);
    const sc = stepped(scan);
    assert.ok(Math.abs(sc.length - want) <= 1,
      `scans ${sc.length}, ${want} expected (dt ${dt}): ${scan.map((m) => m.log)} tf from ${first}`);
    distinctIncreasing(sc, "/robot0/scan");
    assert.ok((per.get("/robot0/camera") || []).length > 0, "camera frames");
  },

  // One step of more ticks than the state ring holds (16..64): the ticks the
  // ring overwrote before the recorder read them are counted in dropped.
  async one_long_step_counts_what_the_ring_lost() {
    const j = stack.json;
    const rec = await j.ok("record_mcap", { path: "long.mcap", topics: ["/tf"] });
    const t0 = (await j.ok("get_state", { robot: 0 })).tick;
    await j.ok("step", { robot: 0, steps: 2000, v: 0.2, w: 0 });
    const t1 = (await j.ok("get_state", { robot: 0 })).tick;
    const st = await j.ok("stop_record_mcap");
    const tf = (await readAll(rec.path)).get("/tf") || [];
    // only /tf is recorded: each lost state record is one /tf lost
    assert.ok(st.dropped > 0, `dropped ${st.dropped}`);
    const stepped = tf.filter((m) => m.data.transforms.length && m.log >= tf[tf.length - 1].log -
      BigInt(Math.round(1999 * Number(tf[tf.length - 1].log - tf[tf.length - 2].log))));
    assert.equal(stepped.length + st.dropped, t1 - t0,
      `/tf ${stepped.length} (${tf.length} in all) + dropped ${st.dropped} of ${t1 - t0}`);
  },

  async stop() {
    assert.equal(await stack.stop(), 0);
    assert.equal(stack.report, "", "sanitizer report from the stack");
  },
};

await run(tests);
