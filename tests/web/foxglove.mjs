// The Foxglove WebSocket server against npm's @foxglove/ws-protocol client on
// a real stack: both subprotocols, the advertised channels and services, a
// LaserScan compared with the JSON protocol's scan of the same tick, cmd_vel
// driving the robot, the reset service, camera encoding only while
// subscribed, and a client that never reads losing messages (counted).
import assert from "node:assert/strict";
import net from "node:net";
import { Stack, run, sleep, waitFor } from "./foxglove_stack.mjs";

let stack;

const TOPICS = {
  "/map": "foxglove.Grid",
  "/tf": "foxglove.FrameTransforms",
  "/scene": "foxglove.SceneUpdate",
  "/robot0/scan": "foxglove.LaserScan",
  "/robot0/odom": "nav_msgs/Odometry",
  "/robot0/camera": "foxglove.CompressedImage",
};

async function callService(f, name, req, callId) {
  const s = f.services.get(name);
  assert.ok(s, `service ${name} advertised`);
  return new Promise((resolve) => {
    const onResp = (r) => {
      if (r.callId !== callId) return;
      f.c.off("serviceCallResponse", onResp);
      f.c.off("serviceCallFailure", onFail);
      resolve({ ok: true, data: JSON.parse(new TextDecoder().decode(r.data)) });
    };
    const onFail = (r) => {
      if (r.callId !== callId) return;
      f.c.off("serviceCallResponse", onResp);
      f.c.off("serviceCallFailure", onFail);
      resolve({ ok: false, message: r.message });
    };
    f.c.on("serviceCallResponse", onResp);
    f.c.on("serviceCallFailure", onFail);
    f.c.sendServiceCallRequest({ serviceId: s.id, callId, encoding: "json",
      data: new TextEncoder().encode(JSON.stringify(req)) });
  });
}

const tests = {
  async start() {
    stack = await Stack.start();
  },

  async subprotocols_and_channels() {
    for (const proto of ["foxglove.websocket.v1", "foxglove.sdk.v1"]) {
      const f = await stack.fox(proto);
      assert.equal(f.ws.protocol, proto);
      assert.equal(f.info.name, "playarea");
      for (const cap of ["time", "clientPublish", "services"])
        assert.ok(f.info.capabilities.includes(cap), `${proto}: capability ${cap}`);
      for (const [topic, schema] of Object.entries(TOPICS)) {
        const ch = f.topic(topic);
        assert.ok(ch, `${proto}: channel ${topic}`);
        assert.equal(ch.schemaName, schema);
        assert.equal(ch.encoding, "json");
        JSON.parse(ch.schema); // a JSON Schema text
      }
      for (const s of ["/reset", "/pause", "/resume", "/step", "/teleport"])
        assert.ok(f.services.has(s), `${proto}: service ${s}`);
      // sim time drives the client's clock
      await waitFor(() => f.times.length >= 3, 5000, "time messages");
      assert.ok(f.times.at(-1) > f.times[0], "sim time advances");
      // every advertised kind delivers, decoded as its schema
      for (const topic of ["/map", "/tf", "/scene", "/robot0/odom"]) f.subscribe(topic);
      await waitFor(() => ["/map", "/tf", "/scene", "/robot0/odom"].every(
        (t) => f.msgs.some((m) => m.topic === t)), 5000, "a message of each topic");
      const map = f.msgs.find((m) => m.topic === "/map").json();
      const cells = Buffer.from(map.data, "base64");
      assert.equal(map.row_stride, map.column_count * map.cell_stride);
      assert.equal(cells.length % map.row_stride, 0);
      assert.ok(map.cell_size.x > 0 && map.fields[0].type === 2);
      const mi = await stack.json.ok("get_map_info");
      assert.equal(map.column_count, mi.width);
      assert.equal(cells.length / map.row_stride, mi.height);
      const tf = f.msgs.find((m) => m.topic === "/tf").json();
      const kids = tf.transforms.map((t) => `${t.parent_frame_id}>${t.child_frame_id}`);
      for (const k of ["map>robot0/base_link", "map>robot0/odom", "robot0/base_link>robot0/laser",
        "robot0/base_link>robot0/camera"])
        assert.ok(kids.includes(k), `tf has ${k}`);
      const odom = f.msgs.find((m) => m.topic === "/robot0/odom").json();
      assert.equal(odom.pose.covariance.length, 36);
      assert.equal(odom.child_frame_id, "robot0/base_link");
      // a subscription to a channel that does not exist gets a status
      f.c.subscribe(999999);
      await waitFor(() => f.statuses.some((s) => /no channel 999999/.test(s.message)), 3000,
        "status for a bad subscription");
      f.close();
    }
    // a client offering neither subprotocol is refused
    const refused = await new Promise((resolve) => {
      const sock = net.createConnection({ host: "127.0.0.1", port: stack.foxPort }, () =>
        sock.write("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
          "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
          "Sec-WebSocket-Protocol: other.v1\r\n\r\n"));
      let got = "";
      sock.on("data", (d) => { got += d; });
      sock.on("close", () => resolve(got));
    });
    assert.match(refused, /^HTTP\/1.1 400/);
  },

  async laserscan_matches_json_scan() {
    const f = await stack.fox();
    f.subscribe("/robot0/scan");
    await waitFor(() => f.msgs.filter((m) => m.topic === "/robot0/scan").length >= 2, 5000,
      "two LaserScans");
    const st = await stack.json.ok("get_sensors", { robot: 0 });
    const want = st.scan;
    const ns = BigInt(Math.round(want.sim_time * 1e9));
    // the same scan (same sim time) arrives on the Foxglove channel
    const m = await waitFor(() => f.msgs.find((x) => x.topic === "/robot0/scan" && x.t === ns),
      5000, `the LaserScan of t=${want.sim_time}`);
    const ls = m.json();
    assert.equal(ls.frame_id, "robot0/laser");
    assert.equal(BigInt(ls.timestamp.sec) * 1000000000n + BigInt(ls.timestamp.nsec), ns);
    assert.equal(ls.ranges.length, want.ranges.length);
    assert.ok(ls.ranges.length > 10);
    // both protocols print the same ranges (rounded to a micrometre); no
    // return (range_max in the JSON protocol) is null here
    assert.ok(want.range_max > 0);
    assert.deepEqual(ls.ranges, want.ranges.map((r) => (r >= want.range_max ? null : r)));
    assert.ok(new Set(ls.ranges).size > 3, "a scan of a real room, not a constant");
    assert.ok(Math.abs(ls.start_angle - want.angle_min) < 1e-6);
    const end = want.angle_min + want.angle_increment * (want.ranges.length - 1);
    assert.ok(Math.abs(ls.end_angle - end) < 1e-5);
    f.close();
  },

  async cmd_vel_drives_the_robot() {
    const f = await stack.fox();
    const before = (await stack.json.ok("get_pose", { robot: 0 })).pose;
    const ch = f.c.advertise({ topic: "/robot0/cmd_vel", encoding: "json",
      schemaName: "geometry_msgs/Twist" });
    const twist = new TextEncoder().encode(JSON.stringify(
      { linear: { x: 0.5, y: 0, z: 0 }, angular: { x: 0, y: 0, z: 0.4 } }));
    const end = Date.now() + 1500;
    while (Date.now() < end) {
      f.c.sendMessage(ch, twist);
      await sleep(50);
    }
    const st = await stack.json.ok("get_state", { robot: 0 });
    const moved = Math.hypot(st.pose[0] - before[0], st.pose[1] - before[1]);
    assert.ok(moved > 0.2, `moved ${moved} m`);
    assert.ok(st.twist[0] > 0.3, `v ${st.twist[0]}`);
    assert.ok(Math.abs(st.twist[2] - 0.4) < 0.1, `w ${st.twist[2]}`);
    // a topic that is not a cmd_vel, and a malformed twist, get a status
    const bad = f.c.advertise({ topic: "/robot0/other", encoding: "json", schemaName: "x" });
    f.c.sendMessage(bad, twist);
    f.c.sendMessage(ch, new TextEncoder().encode("{not json"));
    await waitFor(() => f.statuses.some((s) => /only \/<robot>\/cmd_vel/.test(s.message)) &&
      f.statuses.some((s) => /not a JSON object/.test(s.message)), 3000, "statuses");
    f.c.sendMessage(ch, new TextEncoder().encode(JSON.stringify({ linear: { x: 0 } })));
    f.close();
  },

  async services() {
    const f = await stack.fox();
    const first = await callService(f, "/reset", {}, 10);
    assert.ok(first.ok, JSON.stringify(first));
    const home = (await stack.json.ok("get_pose", { robot: 0 })).pose;
    const paused = await callService(f, "/pause", {}, 1);
    assert.ok(paused.ok && paused.data.success, JSON.stringify(paused));
    const step = await callService(f, "/step", { steps: 20 }, 2);
    assert.ok(step.ok);
    assert.equal(step.data.tick, paused.data.tick + 20);
    const tp = await callService(f, "/teleport", { robot: "robot0", x: 1.0, y: 0.5, theta: 0.3 }, 3);
    assert.ok(tp.ok, JSON.stringify(tp));
    let pose = (await stack.json.ok("get_pose", { robot: 0 })).pose;
    assert.ok(Math.abs(pose[0] - 1.0) < 1e-6 && Math.abs(pose[1] - 0.5) < 1e-6, `${pose}`);
    const bad = await callService(f, "/step", { steps: 0 }, 4);
    assert.ok(!bad.ok && /steps must be/.test(bad.message), JSON.stringify(bad));
    const badtp = await callService(f, "/teleport", { robot: "nobody", x: 0, y: 0 }, 5);
    assert.ok(!badtp.ok && /no such robot/.test(badtp.message));
    const reset = await callService(f, "/reset", {}, 6);
    assert.ok(reset.ok && reset.data.success, JSON.stringify(reset));
    pose = (await stack.json.ok("get_pose", { robot: 0 })).pose;
    assert.ok(Math.hypot(pose[0] - home[0], pose[1] - home[1]) < 1e-6,
      `after reset ${pose} vs the reset pose ${home}`);
    assert.ok(Math.hypot(home[0] - 1.0, home[1] - 0.5) > 0.1, "the teleport was undone");
    const resumed = await callService(f, "/resume", {}, 7);
    assert.ok(resumed.ok);
    f.close();
  },

  async camera_encoded_only_while_subscribed() {
    const f = await stack.fox();
    const idle0 = (await stack.json.ok("foxglove_info")).jpeg_frames;
    await sleep(600);
    const idle1 = (await stack.json.ok("foxglove_info")).jpeg_frames;
    assert.equal(idle1, idle0, "no JPEG without a subscriber");
    const sub = f.subscribe("/robot0/camera");
    const m = await waitFor(() => f.msgs.find((x) => x.topic === "/robot0/camera"), 10000,
      "a camera image");
    const img = m.json();
    assert.equal(img.format, "jpeg");
    const jpeg = Buffer.from(img.data, "base64");
    assert.equal(jpeg[0], 0xff);
    assert.equal(jpeg[1], 0xd8); // SOI
    assert.ok((await stack.json.ok("foxglove_info")).jpeg_frames > idle1);
    f.unsubscribe(sub);
    await sleep(300);
    const a = (await stack.json.ok("foxglove_info")).jpeg_frames;
    await sleep(600);
    const b = (await stack.json.ok("foxglove_info")).jpeg_frames;
    assert.equal(b, a, "encoding stops with the last subscriber");
    f.close();
  },

  // A client that subscribes and never reads: the server drops (and counts)
  // instead of queueing without bound, and the others are still served.
  async slow_client_drops() {
    const info0 = await stack.json.ok("foxglove_info");
    const sock = net.createConnection({ host: "127.0.0.1", port: stack.foxPort });
    await new Promise((r) => sock.once("connect", r));
    sock.write("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
      "Sec-WebSocket-Protocol: foxglove.websocket.v1\r\n\r\n");
    // subscribe to the camera and the map, in one masked text frame
    const f0 = await stack.fox();
    const ids = ["/robot0/camera", "/map", "/robot0/scan", "/tf"].map((t) => f0.topic(t).id);
    f0.close();
    const text = Buffer.from(JSON.stringify({ op: "subscribe",
      subscriptions: ids.map((id, i) => ({ id: i + 1, channelId: id })) }));
    const mask = Buffer.from([1, 2, 3, 4]);
    const hdr = text.length < 126 ? Buffer.from([0x81, 0x80 | text.length])
      : Buffer.from([0x81, 0x80 | 126, text.length >> 8, text.length & 255]);
    const body = Buffer.from(text.map((b, i) => b ^ mask[i % 4]));
    sock.write(Buffer.concat([hdr, mask, body]));
    sock.pause(); // never read again
    const f = await stack.fox();
    f.subscribe("/robot0/odom");
    // each new /map subscription sends the map (~300 KB) to every map
    // subscriber: the stalled socket fills in a second, not in 10
    const maps = [];
    for (let i = 0; i < 40; i++) {
      maps.push(f.subscribe("/map"));
      await sleep(20);
    }
    await waitFor(async () => (await stack.json.ok("foxglove_info")).dropped > info0.dropped,
      20000, "drops counted for the stalled client");
    for (const id of maps) f.unsubscribe(id);
    // the healthy client still gets fresh messages
    const n = f.msgs.length;
    await waitFor(() => f.msgs.length > n + 5, 5000, "messages to the healthy client");
    sock.destroy();
    f.close();
  },

  async parameters() {
    const f = await stack.fox();
    assert.ok(f.info.capabilities.includes("parameters"));
    const got = [];
    f.c.on("parameterValues", (p) => got.push(p));
    f.c.getParameters(["/time_scale", "/paused", "/control_hz"], "q1");
    const q1 = await waitFor(() => got.find((p) => p.id === "q1"), 3000, "parameterValues");
    const v = Object.fromEntries(q1.parameters.map((p) => [p.name, p.value]));
    const st = await stack.json.ok("get_status", {}, "sim_control");
    assert.equal(v["/time_scale"], st.speed);
    assert.equal(v["/paused"], st.paused);
    assert.equal(v["/control_hz"], st.control_hz);
    f.c.setParameters([{ name: "/time_scale", value: 2.5 }], "s1");
    await waitFor(() => got.find((p) => p.id === "s1"), 3000, "setParameters answer");
    await waitFor(async () => (await stack.json.ok("get_status", {}, "sim_control")).speed === 2.5,
      3000, "speed 2.5 applied");
    f.c.setParameters([{ name: "/control_hz", value: 5 }]);
    await waitFor(() => f.statuses.some((s) => /only \/time_scale/.test(s.message)), 3000,
      "a read-only parameter refused");
    f.c.setParameters([{ name: "/time_scale", value: 1 }]);
    await waitFor(async () => (await stack.json.ok("get_status", {}, "sim_control")).speed === 1,
      3000, "speed back to 1");
    f.close();
  },

  // Robots that come and go get their channels advertised and withdrawn.
  async robots_come_and_go() {
    const f = await stack.fox();
    await stack.json.ok("spawn_robot", { name: "rover2", pose: [1.5, 1.0, 0] });
    await waitFor(() => f.topic("/rover2/scan") && f.topic("/rover2/odom") &&
      f.topic("/rover2/camera"), 5000, "rover2's channels");
    const id = f.topic("/rover2/odom").id;
    f.subscribe("/rover2/odom");
    await waitFor(() => f.msgs.some((m) => m.topic === "/rover2/odom"), 5000, "rover2's odom");
    f.subscribe("/tf");
    await waitFor(() => f.msgs.some((m) => m.topic === "/tf" && m.json().transforms.some(
      (t) => t.child_frame_id === "rover2/base_link")), 5000, "rover2 in /tf");
    await stack.json.ok("remove_robot", { robot: "rover2" });
    await waitFor(() => !f.channels.has(id) && !f.topic("/rover2/scan"), 5000,
      "rover2's channels withdrawn");
    f.close();
  },

  // Garbage in any form gets a status (or is ignored) and changes nothing.
  async bad_input() {
    const f = await stack.fox();
    const ws = f.ws;
    ws.send("not json");
    ws.send(JSON.stringify({ op: "fly" }));
    ws.send(JSON.stringify({ op: "subscribe", subscriptions: [{ id: "x" }] }));
    ws.send(JSON.stringify({ op: "unsubscribe", subscriptionIds: [12345] }));
    ws.send(JSON.stringify({ op: "advertise", channels: [{ id: 1, topic: "/a", encoding: "cdr" }] }));
    ws.send(new Uint8Array([0x07, 1, 2]));
    ws.send(new Uint8Array([0x02, 1]));               // a service call, cut short
    ws.send(new Uint8Array([0x01, 9, 0, 0, 0, 123])); // data on a channel never advertised
    const srv = new Uint8Array([0x02, 99, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 106, 115, 111, 110]);
    ws.send(srv);                                      // no service 99
    // ids that would wrap to uint32, and one client channel id given twice
    ws.send(JSON.stringify({ op: "subscribe", subscriptions: [{ id: -1, channelId: 1 }] }));
    ws.send(JSON.stringify({ op: "advertise", channels: [{ id: 2 ** 32 + 7, topic: "/w", encoding: "json" }] }));
    const twice = { id: 77, topic: "/robot0/cmd_vel", encoding: "json" };
    ws.send(JSON.stringify({ op: "advertise", channels: [twice, { ...twice, topic: "/x/cmd_vel" }] }));
    await waitFor(() => f.statuses.length >= 10, 5000, `statuses (${f.statuses.length})`);
    for (const re of [/not a JSON object/, /op fly is not supported/, /integer id and channelId/,
      /only the json encoding/, /unknown binary opcode/, /too short/, /not advertised/,
      /integer id \(0\.\.4294967295\) and topic/, /advertise \/x\/cmd_vel: channel id 77 is in use/])
      assert.ok(f.statuses.some((s) => re.test(s.message)), `a status matching ${re}`);
    assert.equal(f.statuses.filter((s) => /integer id and channelId/.test(s.message)).length, 2,
      "subscription id -1 refused like a string id");
    // still served
    f.subscribe("/tf");
    await waitFor(() => f.msgs.some((m) => m.topic === "/tf"), 5000, "tf after the garbage");
    f.close();
  },

  async stop() {
    assert.equal(await stack.stop(), 0);
    assert.equal(stack.report, "", "sanitizer report from the stack");
  },
};

await run(tests);
