// What Lichtblick's default panels get from us (issue 35), checked with npm's
// @foxglove/ws-protocol client against a real stack: LaserScan beams with no
// return are not drawable numbers (foxglove.LaserScan has no range_max:
// Lichtblick draws every number in ranges); /map carries red, green, blue and
// alpha fields (Lichtblick's rgba-fields mode, not the turbo colormap) whose
// colours are the occupancy look: free white, occupied black, unknown grey;
// /scene has a body per robot (a cylinder of its colour in its frame, a
// heading arrow, its name); each robot's odometry also as
// foxglove.PoseInFrame, which Lichtblick's 3-D panel draws (nav_msgs/Odometry
// it does not); a new sessionId per start; a service call in an encoding
// other than json refused by name; a cmd_vel the robot cannot follow as sent
// answered with a warning status; CameraCalibration beside each camera.
import assert from "node:assert/strict";
import { Stack, run, sleep, waitFor } from "./foxglove_stack.mjs";

const RANGE_MAX = 3;
let stack;

const tests = {
  async start() {
    stack = await Stack.start("--laser_range_max", String(RANGE_MAX));
  },

  async no_return_beams_are_null() {
    const f = await stack.fox();
    f.subscribe("/robot0/scan");
    // robot 0 scans first at tick 20 (100 ms in at real time): wait for it
    const want = await waitFor(
      async () => (await stack.json.ok("get_sensors", { robot: 0 })).scan, 5000, "its first scan");
    const ns = BigInt(Math.round(want.sim_time * 1e9));
    const m = await waitFor(() => f.msgs.find((x) => x.topic === "/robot0/scan" && x.t >= ns),
      5000, "a LaserScan");
    const ls = m.json();
    const none = ls.ranges.filter((r) => r === null).length;
    const hits = ls.ranges.filter((r) => typeof r === "number");
    assert.ok(none > 0, `a 3 m laser in the default room has beams with no return: ${none}`);
    assert.ok(hits.length > 0, "and beams with a return");
    assert.equal(none + hits.length, ls.ranges.length);
    assert.ok(hits.every((r) => r > 0 && r < RANGE_MAX), `returns below range_max: ${Math.max(...hits)}`);
    f.close();
  },

  async map_is_coloured_as_a_map() {
    const f = await stack.fox();
    f.subscribe("/map");
    const map = (await waitFor(() => f.msgs.find((m) => m.topic === "/map"), 5000, "/map")).json();
    const by = Object.fromEntries(map.fields.map((x) => [x.name, x]));
    // all four separate colour fields: Lichtblick picks rgba-fields by them
    for (const c of ["red", "green", "blue", "alpha"])
      assert.equal(by[c]?.type, 1, `${c}: UINT8 field`); // foxglove.NumericType UINT8
    assert.equal(by.occupancy.type, 2); // INT8, as before
    const d = Buffer.from(map.data, "base64");
    const seen = new Map();
    for (let o = 0; o < d.length; o += map.cell_stride) {
      const occ = d.readInt8(o + by.occupancy.offset);
      const rgba = ["red", "green", "blue", "alpha"].map((c) => d[o + by[c].offset]);
      const grey = occ < 0 ? 128 : 255 - Math.round((Math.min(occ, 100) * 255) / 100);
      assert.deepEqual(rgba, [grey, grey, grey, 255], `cell ${o / map.cell_stride} occupancy ${occ}`);
      seen.set(occ, rgba[0]);
    }
    assert.equal(seen.get(0), 255, "free cells white");
    assert.equal(seen.get(100), 0, "occupied cells black");
    f.close();
  },

  async scene_has_a_body_per_robot() {
    const f = await stack.fox();
    f.subscribe("/tf");
    f.subscribe("/scene");
    await waitFor(() => f.msgs.some((m) => m.topic === "/tf"), 5000, "/tf");
    const full = (await waitFor(() => f.msgs.find((m) => m.topic === "/scene" &&
      m.json().deletions.some((d) => d.type === 1)), 5000, "a full /scene")).json();
    const tf = f.msgs.find((m) => m.topic === "/tf").json();
    const robots = tf.transforms.filter((t) => t.child_frame_id.endsWith("/base_link"))
      .map((t) => t.child_frame_id.split("/")[0]);
    assert.ok(robots.length >= 1);
    for (const name of robots) {
      const e = full.entities.find((x) => x.id === `robot/${name}`);
      assert.ok(e, `an entity for ${name}: ${full.entities.map((x) => x.id)}`);
      assert.equal(e.frame_id, `${name}/base_link`);
      assert.equal(e.frame_locked, true);
      assert.equal(e.cylinders.length, 1);
      const c = e.cylinders[0];
      assert.ok(c.size.x > 0.05 && c.size.x === c.size.y && c.size.z > 0, JSON.stringify(c.size));
      assert.ok(Math.abs(c.pose.position.z - c.size.z / 2) < 1e-6, "standing on the floor");
      assert.ok(c.color.a > 0);
      assert.equal(e.arrows.length, 1);
      assert.equal(e.texts[0].text, name);
    }
    f.close();
  },

  async odometry_as_pose_in_frame() {
    const f = await stack.fox();
    const ch = f.topic("/robot0/pose");
    assert.ok(ch, "a /robot0/pose channel");
    assert.equal(ch.schemaName, "foxglove.PoseInFrame");
    f.subscribe("/robot0/pose");
    f.subscribe("/robot0/odom");
    await stack.json.ok("set_velocity", { robot: 0, v: 0.2, w: 0.3 });
    const both = await waitFor(() => {
      const p = f.msgs.filter((m) => m.topic === "/robot0/pose");
      const o = f.msgs.filter((m) => m.topic === "/robot0/odom");
      const last = p.at(-1);
      const od = last && o.find((m) => m.t === last.t);
      return od && [last.json(), od.json()];
    }, 5000, "a pose and the odometry of the same tick");
    await stack.json.ok("stop", { robot: 0 });
    const [pose, odom] = both;
    assert.equal(pose.frame_id, "robot0/odom");
    assert.deepEqual(pose.pose, odom.pose.pose);
    assert.deepEqual(pose.timestamp, odom.header.stamp);
    f.close();
  },

  async session_id_new_each_start() {
    const f = await stack.fox();
    const s2 = await Stack.start();
    try {
      const g = await s2.fox();
      assert.match(f.info.sessionId, /^playarea-[0-9a-f]+-\d+$/);
      assert.notEqual(f.info.sessionId, g.info.sessionId);
      g.close();
    } finally {
      await s2.stop();
    }
    f.close();
  },

  async cbor_service_call_refused_by_name() {
    const f = await stack.fox();
    const s = f.services.get("/pause");
    const fail = new Promise((resolve) => f.c.on("serviceCallFailure", resolve));
    f.c.on("serviceCallResponse", () => assert.fail("a cbor call answered as json"));
    f.c.sendServiceCallRequest({ serviceId: s.id, callId: 9, encoding: "cbor",
      data: new Uint8Array([0xa0]) });
    const r = await fail;
    assert.equal(r.callId, 9);
    assert.match(r.message, /encoding 'cbor' is not supported: only json/);
    assert.equal((await stack.json.ok("get_status", {}, "sim_control")).paused, false);
    f.close();
  },

  async cmd_vel_that_cannot_be_followed_gets_a_status() {
    const f = await stack.fox();
    const ch = f.c.advertise({ topic: "/robot0/cmd_vel", encoding: "json",
      schemaName: "geometry_msgs/Twist" });
    const send = (t) => f.c.sendMessage(ch, new TextEncoder().encode(JSON.stringify(t)));
    send({ linear: { x: 0, y: 0.3, z: 0 }, angular: { x: 0, y: 0, z: 0 } });
    await waitFor(() => f.statuses.some((s) => s.level === 1 &&
      /robot0\/cmd_vel: linear.y 0.3 ignored: the robot is differential/.test(s.message)),
    3000, "the sideways warning");
    send({ linear: { x: 50, y: 0, z: 0 }, angular: { x: 0, y: 0, z: 0 } });
    await waitFor(() => f.statuses.some((s) => s.level === 1 &&
      /linear.x 50 clamped to the robot's max_v \d/.test(s.message)), 3000, "the clamp warning");
    // the same warning again within a second: not repeated
    const n = f.statuses.length;
    send({ linear: { x: 50, y: 0, z: 0 }, angular: { x: 0, y: 0, z: 0 } });
    await sleep(200);
    assert.equal(f.statuses.length, n);
    send({ linear: { x: 0, y: 0, z: 0 }, angular: { x: 0, y: 0, z: 0 } });
    f.close();
  },

  async camera_calibration_with_each_image() {
    const f = await stack.fox();
    const ch = f.topic("/robot0/camera_info");
    assert.ok(ch, "a /robot0/camera_info channel");
    assert.equal(ch.schemaName, "foxglove.CameraCalibration");
    f.subscribe("/robot0/camera_info");
    f.subscribe("/robot0/camera");
    f.subscribe("/tf");
    const [cal, img] = await waitFor(() => {
      const c = f.msgs.find((m) => m.topic === "/robot0/camera_info");
      const i = c && f.msgs.find((m) => m.topic === "/robot0/camera" && m.t === c.t);
      return i && [c.json(), i.json()];
    }, 15000, "a calibration and the image of the same stamp");
    assert.equal(cal.frame_id, "robot0/camera_optical");
    assert.equal(img.frame_id, cal.frame_id);
    assert.ok(cal.width > 0 && cal.height > 0);
    const [fx, , cx, , fy, cy] = cal.K;
    assert.ok(fx > 0 && fx === fy, `K ${cal.K}`);
    assert.equal(cx, cal.width / 2);
    assert.equal(cy, cal.height / 2);
    assert.equal(cal.P.length, 12);
    assert.equal(cal.P[0], fx);
    assert.deepEqual(cal.D, [0, 0, 0, 0, 0]);
    const tf = f.msgs.find((m) => m.topic === "/tf").json();
    assert.ok(tf.transforms.some((t) => t.parent_frame_id === "robot0/camera" &&
      t.child_frame_id === "robot0/camera_optical"), "tf: camera > camera_optical");
    f.close();
  },

  async stop() {
    assert.equal(await stack.stop(), 0);
    assert.equal(stack.report, "", "sanitizer report from the stack");
  },
};

await run(tests);
