// /scene (foxglove.SceneUpdate) of a real `--world ssl-a` stack through
// npm's @foxglove/ws-protocol client: an agent, the SSL ball and every type
// of visual object appear as entities where a TCP client says they are,
// updates carry only what changed, removed ones are deleted by id; and an
// MCAP recording holds the same /scene.
import assert from "node:assert/strict";
import fs from "node:fs";
import { McapIndexedReader } from "@mcap/core";
import { decompress } from "fzstd";
import { Stack, run, sleep, waitFor } from "./foxglove_stack.mjs";

const near = (a, b, tol = 1e-3) => Math.abs(a - b) <= tol;
const R = 0.021335; // the ball's radius
let stack, f;

// The entities a client holds after applying updates in order.
class Scene {
  constructor() { this.ents = new Map(); this.updates = []; }
  apply(u) {
    this.updates.push(u);
    for (const d of u.deletions) {
      if (d.type === 1) this.ents.clear();
      else this.ents.delete(d.id);
    }
    for (const e of u.entities) this.ents.set(e.id, e);
  }
  get(id) { return this.ents.get(id); }
}
let scene;
let seen = 0;
function pump() {
  const ms = f.msgs.filter((m) => m.topic === "/scene");
  for (; seen < ms.length; seen++) {
    let u;
    try { u = ms[seen].json(); } catch (e) { throw new Error(`${e.message}: ${new TextDecoder().decode(ms[seen].raw).slice(0, 300)}`); }
    scene.apply(u);
  }
}
const until = (fn, what, ms = 8000) => waitFor(() => { pump(); return fn(); }, ms, what);

const tests = {
  async start() {
    stack = await Stack.start("--world", "ssl-a");
    f = await stack.fox();
    scene = new Scene();
    f.subscribe("/scene");
    await until(() => scene.updates.length > 0, "a first /scene update");
    const first = scene.updates[0];
    assert.ok(first.deletions.some((d) => d.type === 1), "the first update is full (deletes all)");
  },

  async agent_moves_and_matches_tcp() {
    const j = stack.json;
    await j.ok("spawn_agent", { name: "walker", behaviour: "constant", pose: [2.2, -2.5, 0],
      velocity: [0.3, 0], radius: 0.2 });
    const e0 = await until(() => scene.get("agent/walker"), "agent entity");
    assert.deepEqual(e0.metadata, [{ key: "behaviour", value: "constant" }]);
    assert.equal(e0.cylinders.length, 1, "a circle agent is a cylinder");
    assert.ok(near(e0.cylinders[0].size.x, 0.4), "its diameter");
    assert.equal(e0.arrows.length, 1, "an arrow shows its heading");
    const x0 = e0.cylinders[0].pose.position.x;
    await until(() => scene.get("agent/walker").cylinders[0].pose.position.x > x0 + 0.05,
      "the agent moves in /scene");
    await j.ok("pause", {}, "sim_control");
    await sleep(200);
    const a = (await j.ok("get_agents")).agents.find((q) => q.name === "walker");
    await until(() => {
      const p = scene.get("agent/walker").cylinders[0].pose.position;
      return near(p.x, a.pose[0]) && near(p.y, a.pose[1]);
    }, `paused, /scene's agent is where get_agents says (${a.pose})`);
  },

  async ball_with_its_height() {
    const j = stack.json;
    await j.ok("teleport_ball", { position: [1.2, -1.5, 0.3] });
    const b = (await j.ok("get_ball")).position;
    await until(() => {
      const e = scene.get("ball");
      const p = e?.spheres[0]?.pose.position;
      return p && near(p.x, b[0]) && near(p.y, b[1]) && near(p.z, b[2] + R) ? e : null;
    }, `the ball sphere where get_ball says (${b}), lifted`);
    const s = scene.get("ball").spheres[0];
    assert.ok(near(s.size.x, 2 * R, 1e-6), "ball diameter");
    assert.ok(s.color.r === 1 && s.color.b === 0, "orange");
  },

  async visuals_as_primitives() {
    const j = stack.json;
    const before = scene.updates.length;
    await j.ok("add_visual", { name: "s", type: "sphere", position: [1, 2, 0.5], size: 0.25, color: [1, 0, 0] });
    await j.ok("add_visual", { name: "b", type: "box", position: [-1, 2, 0.1], yaw: Math.PI / 2, size: [0.5, 0.3, 0.2], color: [0, 1, 0, 0.5] });
    await j.ok("add_visual", { name: "c", type: "cylinder", position: [0, 3, 0], size: [0.1, 0.4] });
    await j.ok("add_visual", { name: "k", type: "capsule", position: [2, 3, 1], size: [0.1, 0.6] });
    await j.ok("add_visual", { name: "a", type: "arrow", position: [0, 0, 1], size: [0.5, 0.1], color: [0, 0, 1] });
    await j.ok("add_visual", { name: "l", type: "polyline", points: [[0, 0, 0], [1, 0, 0], [1, 1, 0]] });
    const pts = [];
    for (let i = 0; i < 30; i++) pts.push([i * 0.1, -3, 0, 1, 0, 0]);
    await j.ok("add_visual", { name: "p", type: "point_cloud", points: pts });
    await j.ok("add_visual", { name: "t", type: "text", position: [3, 0, 0.5], text: "hello" });
    const ids = ["s", "b", "c", "k", "a", "l", "p", "t"].map((n) => `visual/${n}`);
    await until(() => ids.every((id) => scene.get(id)), "all 8 visuals in /scene");
    const s = scene.get("visual/s").spheres[0];
    assert.ok(near(s.pose.position.x, 1) && near(s.pose.position.z, 0.5) && near(s.size.x, 0.5), "sphere pose and diameter");
    assert.deepEqual([s.color.r, s.color.g, s.color.b], [1, 0, 0]);
    const b = scene.get("visual/b").cubes[0];
    assert.ok(near(b.size.x, 0.5) && near(b.size.y, 0.3) && near(b.color.a, 0.5), "box size and alpha");
    assert.ok(near(b.pose.orientation.z, Math.sin(Math.PI / 4)) && near(b.pose.orientation.w, Math.cos(Math.PI / 4)), "box yaw");
    const c = scene.get("visual/c").cylinders[0];
    assert.ok(near(c.size.x, 0.2) && near(c.size.z, 0.4), "cylinder diameter and height");
    const k = scene.get("visual/k");
    assert.equal(k.cylinders.length, 1);
    assert.equal(k.spheres.length, 2, "a capsule: a cylinder and two caps");
    const caps = k.spheres.map((q) => q.pose.position.z).sort((x, y) => x - y);
    assert.ok(near(caps[0], 0.7) && near(caps[1], 1.3), `capsule caps at its ends (${caps})`);
    const a = scene.get("visual/a").arrows[0];
    assert.ok(near(a.shaft_length + a.head_length, 0.5) && near(a.head_length, 0.1), "arrow length and head");
    const l = scene.get("visual/l").lines[0];
    assert.equal(l.type, 0, "a polyline is a line strip");
    assert.deepEqual(l.points.map((q) => [q.x, q.y]), [[0, 0], [1, 0], [1, 1]]);
    const p = scene.get("visual/p").cubes;
    assert.equal(p.length, 30, "a point per cube");
    assert.ok(near(p[5].pose.position.x, 0.5) && p[5].color.r === 1 && p[5].color.g === 0, "cloud point pose and colour");
    const t = scene.get("visual/t").texts[0];
    assert.equal(t.text, "hello");
    assert.ok(t.billboard && near(t.pose.position.x, 3), "text pose");

    // an update carries what changed: one visual moved, one entity
    await j.ok("update_visual", { name: "s", position: [1, 2.5, 0.5] });
    const u = await until(() => scene.updates.slice(before).find((q) =>
      !q.deletions.some((d) => d.type === 1) && q.entities.some((e) => e.id === "visual/s" &&
        near(e.spheres[0].pose.position.y, 2.5))), "the moved sphere comes in an update");
    assert.deepEqual(u.entities.map((e) => e.id), ["visual/s"], "only the changed entity");

    // removal: a deletion of its id
    await j.ok("remove_visual", { name: "s" });
    const d = await until(() => scene.updates.find((q) => q.deletions.some((x) => x.type === 0 && x.id === "visual/s")),
      "a deletion of visual/s");
    assert.ok(d);
    assert.ok(!scene.get("visual/s"), "the sphere is gone");
    assert.ok(scene.get("visual/b"), "the others stay");
    await j.ok("update_visual", { name: "b", visible: false });
    await until(() => !scene.get("visual/b"), "an invisible visual is taken out");
    await j.ok("remove_agent", { name: "walker" });
    await until(() => !scene.get("agent/walker"), "remove_agent deletes the agent entity");
    // nothing changes while paused: only the 1 s full updates come
    await sleep(300);
    pump();
    const n0 = scene.updates.length;
    await sleep(1500);
    pump();
    assert.ok(scene.updates.length - n0 <= 3, `${scene.updates.length - n0} updates in 1.5 s of a still world`);
  },

  async meshes_heightmaps_instances() {
    // a mesh and a height map as TriangleListPrimitives, instances as one
    // primitive of their shape each, at their poses (issue 38)
    const j = stack.json;
    await j.ok("add_visual_mesh", {
      name: "m", vertices: [0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0], indices: [0, 1, 2, 0, 2, 3],
      vertex_colors: [255, 0, 0, 255, 0, 0, 0, 0, 255, 0, 0, 255], size: [2, 1, 1], position: [1, -2, 0.2],
    });
    await j.ok("add_visual_heightmap", { name: "h", samples: [3, 2], heights: [0, 0.5, 1, 0, 0.5, 1], size: [2, 1], position: [-2, -2, 0], colormap: "gray" });
    await j.ok("add_instanced_visuals", {
      name: "i", shape: "box", size: [0.2, 0.2, 0.2], position: [0, 1, 0], yaw: Math.PI / 2,
      positions: [[1, 0, 0], [2, 0, 0.5]], scales: [1, [2, 1, 1]], colors: [[0, 1, 0], [0, 0, 1, 0.5]],
    });
    await until(() => ["m", "h", "i"].every((n) => scene.get(`visual/${n}`)), "mesh, height map and instances in /scene");
    const m = scene.get("visual/m").triangles[0];
    assert.equal(m.points.length, 6, "two triangles, three points each");
    assert.deepEqual(m.points.map((q) => [q.x, q.y]), [[0, 0], [2, 0], [2, 1], [0, 0], [2, 1], [0, 1]], "the indices resolved, scaled 2 x 1");
    assert.ok(near(m.pose.position.x, 1) && near(m.pose.position.z, 0.2), "the mesh at its pose");
    assert.equal(m.colors.length, 6);
    assert.ok(m.colors[1].r === 1 && m.colors[2].b === 1, "the vertex colours");
    const h = scene.get("visual/h").triangles[0];
    assert.equal(h.points.length, 2 * 6, "2 x 1 cells, two triangles each");
    const zs = h.points.map((q) => q.z);
    assert.ok(Math.min(...zs) === 0 && Math.max(...zs) === 1, "the heights");
    const lo = h.colors[zs.indexOf(0)], hi = h.colors[zs.indexOf(1)];
    assert.ok(hi.r > lo.r + 0.5, `coloured by height (gray: ${lo.r} low, ${hi.r} high)`);
    const i = scene.get("visual/i").cubes;
    assert.equal(i.length, 2, "a cube per instance");
    // turned 90 degrees: instance x becomes world y
    assert.ok(near(i[0].pose.position.x, 0) && near(i[0].pose.position.y, 2), `instance 0 at (0, 2) (${JSON.stringify(i[0].pose.position)})`);
    assert.ok(near(i[1].pose.position.y, 3) && near(i[1].pose.position.z, 0.5), "instance 1 at (0, 3, 0.5)");
    assert.ok(near(i[1].size.x, 0.4) && near(i[1].size.y, 0.2), "instance 1 scaled 2 x 1 x 1");
    assert.ok(i[0].color.g === 1 && near(i[1].color.a, 0.5, 0.01), `their colours (${JSON.stringify(i.map((q) => q.color))})`);
    await j.ok("remove_visual", { name: "m" });
    await j.ok("remove_visual", { name: "h" });
    await j.ok("remove_visual", { name: "i" });
    await until(() => !scene.get("visual/m") && !scene.get("visual/i"), "removed, deleted by id");
  },

  async mcap_holds_the_same_scene() {
    const j = stack.json;
    await j.ok("resume", {}, "sim_control");
    await j.ok("spawn_agent", { name: "rec", behaviour: "random", pose: [-2.5, 2.5, 0], radius: 0.15 });
    const rec = await j.ok("record_mcap", { path: "scene.mcap", seconds: 1 });
    await waitFor(async () => !(await j.ok("foxglove_info")).recording, 10000, "the 1 s recording");
    const buf = fs.readFileSync(rec.path);
    const r = await McapIndexedReader.Initialize({
      readable: { size: async () => BigInt(buf.length), read: async (o, n) => buf.subarray(Number(o), Number(o + n)) },
      decompressHandlers: { zstd: (d, n) => decompress(d, new Uint8Array(Number(n))) } });
    const sc = new Scene();
    let moves = 0, last;
    for await (const m of r.readMessages({ topics: ["/scene"] })) {
      sc.apply(JSON.parse(new TextDecoder().decode(m.data)));
      const x = sc.get("agent/rec")?.cylinders[0].pose.position.x;
      if (last !== undefined && x !== last) moves++;
      last = x;
    }
    assert.ok(sc.updates[0].deletions.some((d) => d.type === 1), "the recording starts with a full update");
    for (const id of ["agent/rec", "ball", "visual/a", "visual/p", "visual/t"])
      assert.ok(sc.get(id), `the recording's /scene holds ${id}`);
    assert.ok(!sc.get("visual/s") && !sc.get("agent/walker"), "and not what was removed");
    assert.ok(moves >= 5, `the agent moves in the recording (${moves} updates)`);
  },
};

run(tests);
