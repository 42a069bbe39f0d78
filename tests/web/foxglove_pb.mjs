// --foxglove_encoding protobuf (issue 35), checked with npm's
// @foxglove/ws-protocol client against a real stack: scans and camera images
// are advertised in protobuf with a FileDescriptorSet schema, and each
// message decodes (Debian's python3-protobuf, building the classes from the
// advertised set alone, as a client does) into the foxglove schema's fields:
// no-return beams are +inf, the image a JPEG, /scene (foxglove.SceneUpdate)
// holds the same entities as a JSON stack's, in fewer bytes. The other
// channels stay JSON;
// a recording holds the same protobuf channels; a JSON stack is unchanged;
// a bad --foxglove_encoding is refused by name.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { McapIndexedReader } from "@mcap/core";
import { decompress } from "fzstd";
import { Stack, binDir, run, sleep, waitFor } from "./foxglove_stack.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const RANGE_MAX = 3;
let stack;

// The messages decoded by python3-protobuf from the schema fds (base64).
function decode(fds, type, raws, enumsAsInts = false) {
  const r = spawnSync("/usr/bin/python3", [path.join(here, "fox_pb_decode.py")], {
    input: JSON.stringify({ fds, type, msgs: raws.map((m) => Buffer.from(m).toString("base64")),
      enums_as_ints: enumsAsInts }),
    encoding: "utf8" });
  assert.equal(r.status, 0, `fox_pb_decode.py: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function raw(m) {
  return new Uint8Array(m.raw.buffer, m.raw.byteOffset, m.raw.byteLength);
}


// A decoded protobuf or a JSON entity with what proto3 leaves out dropped
// (zeros, false, "", empty lists), without its stamps: both encodings of
// one entity compare equal.
function norm(v) {
  if (Array.isArray(v)) return v.length ? v.map(norm) : undefined;
  if (v && typeof v === "object") {
    const o = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === "timestamp" || k === "lifetime") continue;
      const n = norm(x);
      if (n !== undefined) o[k] = n;
    }
    return Object.keys(o).length ? o : undefined;
  }
  return v === 0 || v === false || v === "" ? undefined : v;
}

function sameValue(a, b, at) {
  if (typeof a === "number" && typeof b === "number") {
    assert.ok(Math.abs(a - b) <= 1e-3 * Math.max(1, Math.abs(a)), `${at}: ${a} vs ${b}`);
    return;
  }
  if (a && b && typeof a === "object" && typeof b === "object") {
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort(), at);
    for (const k of Object.keys(a)) sameValue(a[k], b[k], `${at}.${k}`);
    return;
  }
  assert.equal(a, b, at);
}

// The same visuals and agent on a stack (paused: nothing moves).
async function furnish(j) {
  await j.ok("pause", {}, "sim_control");
  await j.ok("spawn_agent", { name: "w", behaviour: "constant", pose: [1.5, -1, 0.3], radius: 0.2 });
  const vis = [
    { name: "s", type: "sphere", position: [1, 2, 0.5], size: 0.25, color: [1, 0, 0] },
    { name: "b", type: "box", position: [-1, 2, 0.1], yaw: 0.7, size: [0.5, 0.3, 0.2], color: [0, 1, 0, 0.5] },
    { name: "c", type: "cylinder", position: [0, 3, 0], size: [0.1, 0.4] },
    { name: "k", type: "capsule", position: [2, 3, 1], size: [0.1, 0.6] },
    { name: "a", type: "arrow", position: [0, 0, 1], size: [0.5, 0.1], color: [0, 0, 1] },
    { name: "l", type: "polyline", points: [[0, 0, 0, 1, 0, 0], [1, 0, 0, 0, 1, 0], [1, 1, 0, 0, 0, 1]] },
    { name: "p", type: "point_cloud", points: [[0.1, -3, 0, 1, 0, 0], [0.2, -3, 0, 0, 1, 0]] },
    { name: "t", type: "text", position: [3, 0, 0.5], text: "h\u00e9llo \"q\"" }];
  for (const v of vis) await j.ok("add_visual", v);
  return ["agent/w", "robot/robot0", ...vis.map((v) => `visual/${v.name}`)];
}

// The first full /scene update (it deletes all) holding every id of ids.
function fullScene(f, ids, parse) {
  return waitFor(() => scenes(f, parse).find(([, u]) => (u.deletions || []).some((d) => d.type === 1) &&
    ids.every((id) => (u.entities || []).some((e) => e.id === id))), 15000, "a full /scene");
}

// f's /scene messages with each one parsed once (a decode spawns python).
function scenes(f, parse = f.sceneParse) {
  f.sceneParse = parse;
  return f.msgs.filter((m) => m.topic === "/scene").map((m) => {
    m.parsed ??= parse(m);
    return [m, m.parsed];
  });
}

const tests = {
  async start() {
    stack = await Stack.start("--laser_range_max", String(RANGE_MAX),
      "--foxglove_encoding", "protobuf");
  },

  async channels_advertised_in_protobuf() {
    const f = await stack.fox();
    for (const [t, s] of [["/robot0/scan", "foxglove.LaserScan"],
      ["/robot0/camera", "foxglove.CompressedImage"], ["/scene", "foxglove.SceneUpdate"]]) {
      const ch = f.topic(t);
      assert.equal(ch.encoding, "protobuf", t);
      assert.equal(ch.schemaEncoding, "protobuf", t);
      assert.equal(ch.schemaName, s);
      const d = decode(ch.schema, s, []);
      assert.ok(d.files.includes("google/protobuf/timestamp.proto"), `imports: ${d.files}`);
    }
    for (const t of ["/map", "/tf", "/robot0/odom", "/robot0/camera_info"]) {
      assert.equal(f.topic(t).encoding, "json", t);
      assert.equal(f.topic(t).schemaEncoding, "jsonschema", t);
    }
    f.close();
  },

  async scan_decodes_with_inf_for_no_return() {
    const f = await stack.fox();
    f.subscribe("/robot0/scan");
    f.subscribe("/tf");
    // robot 0 scans first at tick 20 (100 ms in at real time): wait for it
    const want = await waitFor(
      async () => (await stack.json.ok("get_sensors", { robot: 0 })).scan, 5000, "its first scan");
    const ns = BigInt(Math.round(want.sim_time * 1e9));
    const ms = await waitFor(() => {
      const l = f.msgs.filter((x) => x.topic === "/robot0/scan" && x.t >= ns);
      return l.length >= 2 && l;
    }, 5000, "LaserScans");
    const [ls, ls2] = decode(f.topic("/robot0/scan").schema, "foxglove.LaserScan",
      ms.slice(0, 2).map(raw)).msgs;
    assert.equal(ls.frame_id, "robot0/laser");
    assert.match(ls.timestamp, /^19\d\d-|^20\d\d-/); // a google.protobuf.Timestamp
    assert.ok(Number(ls2.timestamp.replace(/\D/g, "")) >= 0);
    assert.equal(ls.pose.orientation.w, 1);
    const inf = ls.ranges.filter((r) => r === "Infinity").length;
    const hits = ls.ranges.filter((r) => typeof r === "number");
    assert.ok(inf > 0, `a 3 m laser in the default room has beams with no return: ${inf}`);
    assert.ok(hits.length > 0 && hits.every((r) => r > 0 && r < RANGE_MAX),
      `returns below range_max: ${Math.max(...hits)}`);
    assert.equal(inf + hits.length, ls.ranges.length);
    assert.ok(ls.end_angle > ls.start_angle);
    // 8 bytes a range plus the header: no text, no per-range overhead
    assert.ok(ms[0].bytes < 8 * ls.ranges.length + 100, `${ms[0].bytes} bytes`);
    // the JSON /tf beside it still parses
    const tf = await waitFor(() => f.msgs.find((m) => m.topic === "/tf"), 5000, "/tf");
    assert.ok(Array.isArray(tf.json().transforms));
    f.close();
  },

  async image_decodes_as_jpeg() {
    const f = await stack.fox();
    f.subscribe("/robot0/camera");
    f.subscribe("/robot0/camera_info");
    const m = await waitFor(() => f.msgs.find((x) => x.topic === "/robot0/camera"),
      15000, "a CompressedImage");
    const [img] = decode(f.topic("/robot0/camera").schema, "foxglove.CompressedImage",
      [raw(m)]).msgs;
    assert.equal(img.frame_id, "robot0/camera_optical");
    assert.equal(img.format, "jpeg");
    const jpeg = Buffer.from(img.data, "base64");
    assert.ok(jpeg.length > 100 && jpeg[0] === 0xff && jpeg[1] === 0xd8 &&
      jpeg[jpeg.length - 2] === 0xff && jpeg[jpeg.length - 1] === 0xd9, "a whole JPEG");
    const cal = await waitFor(() => f.msgs.find((x) => x.topic === "/robot0/camera_info"),
      5000, "camera_info (json)");
    assert.equal(cal.json().frame_id, img.frame_id);
    f.close();
  },

  async scene_decodes_as_the_json_one() {
    // a JSON stack beside it, furnished the same: each entity of a full
    // update decodes to what the JSON one says
    const js = await Stack.start("--laser_range_max", String(RANGE_MAX));
    const ids = await furnish(stack.json);
    await furnish(js.json);
    const f = await stack.fox(), g = await js.fox();
    f.subscribe("/scene");
    g.subscribe("/scene");
    const schema = f.topic("/scene").schema;
    const [pm, pu] = await fullScene(f, ids,
      (m) => decode(schema, "foxglove.SceneUpdate", [raw(m)], true).msgs[0]);
    const [jm, ju] = await fullScene(g, ids, (m) => m.json());
    assert.equal(pu.entities.length, ju.entities.length, "as many entities");
    for (const je of ju.entities) {
      const pe = pu.entities.find((e) => e.id === je.id);
      assert.ok(pe, `${je.id} in protobuf`);
      sameValue(norm(pe), norm(je), je.id);
    }
    assert.equal(pu.deletions.length, 1);
    assert.equal(pu.deletions[0].type, 1);
    // the stamp: a google.protobuf.Timestamp of the same sim time
    const e = pu.entities.find((x) => x.id === "visual/l");
    assert.equal(e.lines[0].colors.length, 3, "per-point colours");
    assert.equal(pu.entities.find((x) => x.id === "visual/t").texts[0].text, "h\u00e9llo \"q\"");
    assert.equal(pu.entities.find((x) => x.id === "robot/robot0").frame_locked, true);
    console.log(`full /scene of ${ju.entities.length} entities: JSON ${jm.bytes} bytes, ` +
      `protobuf ${pm.bytes} bytes (${(pm.bytes / jm.bytes * 100).toFixed(0)} %)`);
    assert.ok(pm.bytes < jm.bytes * 0.7, `protobuf smaller: ${pm.bytes} vs ${jm.bytes}`);
    // an update that is not full: what changed, and deletions by id
    await stack.json.ok("update_visual", { name: "s", position: [1, 2.5, 0.5] });
    await stack.json.ok("remove_visual", { name: "b" });
    const upd = await waitFor(() => scenes(f).map(([, u]) => u).find((u) =>
      (u.deletions || []).some((d) => (d.type || 0) === 0 && d.id === "visual/b")), 8000,
    "a deletion of visual/b by id");
    assert.ok(!(upd.entities || []).some((x) => x.id === "robot/robot0"), "unchanged entities are not resent");
    f.close();
    g.close();
    assert.equal(await js.stop(), 0);
  },

  async recording_holds_the_protobuf_channels() {
    const j = stack.json;
    await j.ok("resume", {}, "sim_control");
    const rec = await j.ok("record_mcap", { path: "pb.mcap", topics: ["/robot0/*", "/scene"] });
    await sleep(1500); // a few scans (10 Hz) of sim time
    await j.ok("stop_record_mcap");
    const buf = fs.readFileSync(rec.path);
    const r = await McapIndexedReader.Initialize({ decompressHandlers:
      { zstd: (d, n) => decompress(d, new Uint8Array(Number(n))) },
    readable: { size: async () => BigInt(buf.length),
      read: async (o, n) => buf.subarray(Number(o), Number(o + n)) } });
    const ch = [...r.channelsById.values()].find((c) => c.topic === "/robot0/scan");
    assert.ok(ch, "a /robot0/scan channel");
    assert.equal(ch.messageEncoding, "protobuf");
    const schema = r.schemasById.get(ch.schemaId);
    assert.equal(schema.encoding, "protobuf");
    assert.equal(schema.name, "foxglove.LaserScan");
    const odom = [...r.channelsById.values()].find((c) => c.topic === "/robot0/odom");
    assert.equal(odom.messageEncoding, "json");
    const raws = [];
    for await (const m of r.readMessages({ topics: ["/robot0/scan"] })) raws.push(m.data);
    assert.ok(raws.length > 0, "scans recorded");
    const d = decode(Buffer.from(schema.data).toString("base64"), "foxglove.LaserScan",
      raws.slice(0, 3));
    assert.ok(d.msgs.every((s) => s.frame_id === "robot0/laser" && s.ranges.includes("Infinity")));
    const sch = [...r.channelsById.values()].find((c) => c.topic === "/scene");
    assert.equal(sch.messageEncoding, "protobuf");
    const ss = r.schemasById.get(sch.schemaId);
    assert.equal(ss.name, "foxglove.SceneUpdate");
    const scenes = [];
    for await (const m of r.readMessages({ topics: ["/scene"] })) scenes.push(m.data);
    const u = decode(Buffer.from(ss.data).toString("base64"), "foxglove.SceneUpdate", scenes.slice(0, 1),
      true).msgs[0];
    assert.equal(u.deletions[0].type, 1, "the recording starts with a full /scene");
    assert.ok(u.entities.some((e) => e.id === "robot/robot0" && e.cylinders.length === 1),
      "with the robot's body");
  },

  async bad_encoding_refused_by_name() {
    const r = spawnSync(path.join(binDir(), "pa-netgw"), ["--foxglove_encoding", "cbor"],
      { encoding: "utf8", timeout: 10000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /--foxglove_encoding: 'cbor' is not json or protobuf/);
  },

  async stop() {
    assert.equal(await stack.stop(), 0);
    assert.equal(stack.report, "", "sanitizer report from the stack");
  },
};

await run(tests);
