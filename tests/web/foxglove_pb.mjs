// --foxglove_encoding protobuf (issue 35), checked with npm's
// @foxglove/ws-protocol client against a real stack: scans and camera images
// are advertised in protobuf with a FileDescriptorSet schema, and each
// message decodes (Debian's python3-protobuf, building the classes from the
// advertised set alone, as a client does) into the foxglove schema's fields:
// no-return beams are +inf, the image a JPEG. The other channels stay JSON;
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
function decode(fds, type, raws) {
  const r = spawnSync("/usr/bin/python3", [path.join(here, "fox_pb_decode.py")], {
    input: JSON.stringify({ fds, type, msgs: raws.map((m) => Buffer.from(m).toString("base64")) }),
    encoding: "utf8" });
  assert.equal(r.status, 0, `fox_pb_decode.py: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function raw(m) {
  return new Uint8Array(m.raw.buffer, m.raw.byteOffset, m.raw.byteLength);
}

const tests = {
  async start() {
    stack = await Stack.start("--laser_range_max", String(RANGE_MAX),
      "--foxglove_encoding", "protobuf");
  },

  async channels_advertised_in_protobuf() {
    const f = await stack.fox();
    for (const [t, s] of [["/robot0/scan", "foxglove.LaserScan"],
      ["/robot0/camera", "foxglove.CompressedImage"]]) {
      const ch = f.topic(t);
      assert.equal(ch.encoding, "protobuf", t);
      assert.equal(ch.schemaEncoding, "protobuf", t);
      assert.equal(ch.schemaName, s);
      const d = decode(ch.schema, s, []);
      assert.ok(d.files.includes("google/protobuf/timestamp.proto"), `imports: ${d.files}`);
    }
    for (const t of ["/map", "/tf", "/scene", "/robot0/odom", "/robot0/camera_info"]) {
      assert.equal(f.topic(t).encoding, "json", t);
      assert.equal(f.topic(t).schemaEncoding, "jsonschema", t);
    }
    f.close();
  },

  async scan_decodes_with_inf_for_no_return() {
    const f = await stack.fox();
    f.subscribe("/robot0/scan");
    f.subscribe("/scene");
    const want = (await stack.json.ok("get_sensors", { robot: 0 })).scan;
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
    // the JSON /scene beside it still parses
    const sc = await waitFor(() => f.msgs.find((m) => m.topic === "/scene"), 5000, "/scene");
    assert.ok(Array.isArray(sc.json().entities));
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

  async recording_holds_the_protobuf_channels() {
    const j = stack.json;
    const rec = await j.ok("record_mcap", { path: "pb.mcap", topics: ["/robot0/*"] });
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
