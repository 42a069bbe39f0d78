// The live viewer draws what now exists besides robots and obstacles, where a
// TCP client says it is: an agent (moving, violet), the SSL ball (orange,
// drawn up by its height when chipped) and RaisimServer's visual objects in
// their colours (a point cloud arriving as binary), checked on the canvas's
// pixels in a real chromium against a real `--world ssl-a` stack.
import path from 'node:path';
import { startStack, browser, tcpClient, run, check, until } from './harness.mjs';

const near = (a, b, tol) => Math.abs(a - b) <= tol;
const close = (c, want, tol = 40) => c && want.every((v, i) => Math.abs(c[i] - v) <= tol);

// The canvas pixel at world (x, y), dz metres drawn up (as a chipped ball).
const pixel = (page, x, y, dz = 0) => page.evaluate(([wx, wy, up]) => {
  const c = document.getElementById('view');
  const [sx, sy] = window.pa.toScreen(wx, wy);
  const py = sy - up * (window.pa.toScreen(0, 1)[1] - window.pa.toScreen(0, 2)[1]);
  return [...c.getContext('2d').getImageData(Math.round(sx), Math.round(py), 1, 1).data];
}, [x, y, dz]);

async function ok(tcp, action, data = {}, type = 'command') {
  const r = await tcp.request(action, data, type);
  if (!r.success) throw new Error(`${action}: ${JSON.stringify(r.error)}`);
  return r.data;
}

run(async () => {
  const st = await startStack(['--world', 'ssl-a', '--no-render']);
  const tcp = await tcpClient(st.tcpPort);
  const page = await browser();
  await page.goto(`${st.url}/`);
  await until(() => page.evaluate(() => !!(window.pa?.state && window.pa.map && window.pa.world.robots.length)),
    'viewer gets state, map and world');
  // --no-render: pa-render is "off" with no figures, not "down" with -1.0
  const render = await until(async () => {
    const t = await page.locator('#procs').innerText();
    return /render/.test(t) ? t.split('\n').find((l) => l.startsWith('render')) : null;
  }, 'the process table lists render');
  check(/^render\s+off(\s+\u2014)+\s*$/.test(render) && !/-1/.test(render), `render without figures: ${JSON.stringify(render)}`);
  await page.uncheck('#showrays');
  await page.uncheck('#showtrails');
  // the whole field in view, robots away from what is checked below
  const robots = await page.evaluate(() => window.pa.state.robots);
  const free = (x, y) => robots.every((r) => Math.hypot(r[1] - x, r[2] - y) > 0.4);

  // ---- the SSL field (division A, 12 x 9 m): green carpet, white lines, goals
  check(await page.evaluate(() => window.pa.state.ssl) === 'A', 'state frames name the division');
  const green = [30, 120, 50], white = [255, 255, 255], goal = [17, 17, 17];
  const spots = [
    [[3, 3.5], green, 'carpet inside the field'], [[6.15, 3], green, 'carpet in the boundary'],
    [[0, 3.5], white, 'halfway line'], [[3, 4.5], white, 'touch line'], [[-6, 3], white, 'goal line'],
    [[4.2, 1], white, 'defence area front line'], [[-5, -1.8], white, 'defence area side line'],
    [[0, -0.5], white, 'centre circle'], [[6.18, 0], goal, 'goal back wall (east)'], [[-6.09, -0.9], goal, 'goal side wall (west)'],
  ];
  for (const [[x, y], want, what] of spots) {
    check(free(x, y), `${what} spot (${x}, ${y}) is free of robots`);
    await until(async () => close(await pixel(page, x, y), want, 30), `${what} drawn at (${x}, ${y})`);
  }

  // ---- an agent: moves on the page frame by frame, violet where TCP says
  check(free(2.2, -2.5) && free(0, -2) && free(-1.5, 2) && free(-2.5, -2.5), 'test spots are free of robots');
  await ok(tcp, 'spawn_agent', { name: 'walker', behaviour: 'constant', pose: [2.2, -2.5, 0], velocity: [0.3, 0], radius: 0.2 });
  const w = await until(() => page.evaluate(() => window.pa.world.obstacles.find((o) => o.name === 'walker')),
    'world frame lists the agent');
  check(w.agent === 'constant' && w.shape === 'circle', `agent carries its behaviour (${w.agent})`);
  const a0 = await until(() => page.evaluate((s) => window.pa.state.agents.find((a) => a[0] === s), w.slot),
    'state frames carry the agent pose');
  await until(async () => {
    const a = await page.evaluate((s) => window.pa.state.agents.find((q) => q[0] === s), w.slot);
    return a && a[1] > a0[1] + 0.05;
  }, 'the agent moves on the page frame by frame');
  // moving alone, an agent changes no "world" frame: its pose rides the
  // state frames, which a slow browser may skip
  const wf0 = await page.evaluate(() => window.pa.worldFrames);
  const f0 = await page.evaluate(() => window.pa.frames);
  await new Promise((r) => setTimeout(r, 1000));
  const wf1 = await page.evaluate(() => window.pa.worldFrames);
  const f1 = await page.evaluate(() => window.pa.frames);
  check(f1 - f0 >= 5 && wf1 === wf0, `no world frame while the agent walks (${wf1 - wf0} in ${f1 - f0} state frames)`);
  await ok(tcp, 'pause', {}, 'sim_control');
  await until(() => page.evaluate(() => window.pa.state.paused), 'page shows paused');
  const ta = (await ok(tcp, 'get_agents')).agents.find((a) => a.name === 'walker');
  const pa = await until(async () => {
    const a = await page.evaluate((s) => window.pa.state.agents.find((q) => q[0] === s), w.slot);
    return a && near(a[1], ta.pose[0], 1e-3) && near(a[2], ta.pose[1], 1e-3) ? a : null;
  }, 'paused, the page agent pose = get_agents over TCP');
  await until(async () => close(await pixel(page, pa[1], pa[2]), [150, 60, 200]),
    'the agent is drawn violet where TCP says it is');
  // a static obstacle next to it keeps its own colour
  await ok(tcp, 'spawn_obstacle', { name: 'block', shape: 'box', pose: [-2.5, -2.5, 0], size: [0.4, 0.4] });
  await until(async () => { const c = await pixel(page, -2.5, -2.5); return close(c, [150, 100, 50], 50) && !close(c, [150, 60, 200], 20); },
    'a static obstacle is drawn brown, not as an agent');

  // ---- the ball: orange where get_ball says, drawn up by its height
  await ok(tcp, 'teleport_ball', { position: [0, -2] });
  const b = (await ok(tcp, 'get_ball')).position;
  await until(async () => {
    const s = await page.evaluate(() => window.pa.state.ball);
    return s && near(s[0], b[0], 1e-3) && near(s[1], b[1], 1e-3) && near(s[2], 0, 1e-3);
  }, `the page ball = get_ball over TCP (${b})`);
  await until(async () => close(await pixel(page, b[0], b[1]), [255, 140, 0]), 'the ball is drawn orange there');
  await ok(tcp, 'teleport_ball', { position: [0, -2, 0.5] });
  const bz = (await ok(tcp, 'get_ball')).position;
  check(near(bz[2], 0.5, 1e-6), `get_ball over TCP: the ball is up (${bz[2]} m)`);
  await until(async () => { const s = await page.evaluate(() => window.pa.state.ball); return s && near(s[2], bz[2], 1e-3); },
    'the page ball has its height');
  await until(async () => close(await pixel(page, bz[0], bz[1], bz[2]), [255, 140, 0]) &&
    !close(await pixel(page, bz[0], bz[1]), [255, 140, 0]), 'chipped, it is drawn up by its height, a shadow below');

  // ---- visual objects, in their colours; a point cloud as binary
  await ok(tcp, 'add_visual', { name: 'red', type: 'sphere', position: [-1.5, 2, 0.2], size: 0.25, color: [1, 0, 0] });
  await ok(tcp, 'add_visual', { name: 'green', type: 'box', position: [-0.5, 2, 0.1], size: [0.5, 0.3, 0.2], color: [0, 1, 0] });
  const pts = [];
  for (let i = 0; i < 50; i++) pts.push([1 + i * 0.02, 2, 0]);
  await ok(tcp, 'add_visual', { name: 'cloud', type: 'point_cloud', points: pts, size: 6, color: [0, 0, 1] });
  const seen = await until(() => page.evaluate(() => window.pa.visuals.length === 3 ? window.pa.visuals : null),
    'the page gets the 3 visuals');
  const cloud = seen.find((v) => v.label.name === 'cloud');
  check(cloud.points?.length === 50 && near(cloud.points[10][0], 1.2, 1e-5), 'the point cloud came whole through VIS1');
  await until(async () => close(await pixel(page, -1.5, 2), [255, 0, 0]), 'the sphere is drawn red where it was added');
  await until(async () => close(await pixel(page, -0.5, 2), [0, 255, 0]), 'the box is drawn green');
  await until(async () => close(await pixel(page, 1.5, 2), [0, 0, 255]), 'the point cloud is drawn blue');
  const wi = await until(async () => {
    const t = await page.locator('#worldinfo').innerText();
    return /visuals\s+3/.test(t) && /1 static, 1 agents/.test(t) ? t : null;
  }, 'the world panel counts the obstacle, the agent and the visuals');
  check(/map\s+\d+\.\d x \d+\.\d m/.test(wi) && /robots\s+22/.test(wi), `the world panel: ${wi.replace(/\s+/g, ' ')}`);
  await ok(tcp, 'update_visual', { name: 'red', position: [-1.5, 1, 0.2] });
  await until(async () => close(await pixel(page, -1.5, 1), [255, 0, 0]) && !close(await pixel(page, -1.5, 2), [255, 0, 0]),
    'update_visual moves the red sphere on the page');
  await ok(tcp, 'remove_visual', { name: 'red' });
  await until(async () => !close(await pixel(page, -1.5, 1), [255, 0, 0]) &&
    (await page.evaluate(() => window.pa.visuals.length)) === 2, 'remove_visual takes it off the page');
  // the move and the removal came as deltas (issue 32): the cloud, not re-sent,
  // is still there whole and drawn
  const kept = await page.evaluate(() => window.pa.visuals.find((v) => v.label.name === 'cloud'));
  check(kept?.points?.length === 50 && near(kept.points[10][0], 1.2, 1e-5), 'the point cloud stays whole through the deltas');
  await until(async () => close(await pixel(page, 1.5, 2), [0, 0, 255]), 'the point cloud is still drawn blue');

  // ---- a mesh from arrays, a height map coloured by its heights and
  // instanced spheres, their geometry arriving as binary too
  const spots2 = [[2.5, -3.5], [-1.9, -3.5], [-0.1, -3.5], [-4, -3.5], [-3.4, -3.5], [-2.8, -3.5]];
  check(spots2.every(([x, y]) => free(x, y)), 'mesh, height map and instance spots are free of robots');
  await ok(tcp, 'add_visual_mesh', {
    name: 'sq', vertices: [-0.3, -0.3, 0, 0.3, -0.3, 0, 0.3, 0.3, 0, -0.3, 0.3, 0], indices: [0, 1, 2, 0, 2, 3],
    position: [2.5, -3.5, 0.1], color: [1, 1, 0],
  });
  const hs = [];
  for (let j = 0; j < 4; j++) for (let i = 0; i < 10; i++) hs.push(i / 9);
  await ok(tcp, 'add_visual_heightmap', { name: 'hm', samples: [10, 4], heights: hs, size: [2, 0.6], position: [-1, -3.5, 0] });
  await ok(tcp, 'add_instanced_visuals', {
    name: 'inst', shape: 'sphere', size: 0.15, positions: [[-4, -3.5, 0], [-3.4, -3.5, 0], [-2.8, -3.5, 0]],
    colors: [[1, 0, 1], [1, 0, 1], [1, 0, 1]],
  });
  const geo = await until(() => page.evaluate(() => window.pa.visuals.length === 5 ? window.pa.visuals : null),
    'the page gets the mesh, the height map and the instances');
  const hmv = geo.find((v) => v.label.name === 'hm');
  check(hmv.points?.length === 40 && hmv.grid?.[0] === 10, 'the height map came whole (10 x 4 samples)');
  await until(async () => close(await pixel(page, 2.5, -3.5), [255, 255, 0]), 'the mesh is drawn yellow');
  await until(async () => close(await pixel(page, -1.9, -3.5), [68, 1, 84], 50) &&
    close(await pixel(page, -0.1, -3.5), [182, 218, 64], 40), 'the height map: dark purple low, yellow-green high (viridis; a cell in its first sample\'s colour)');
  for (const [x, y] of spots2.slice(3)) {
    await until(async () => close(await pixel(page, x, y), [255, 0, 255]), `an instance is drawn magenta at (${x}, ${y})`);
  }
  check(!close(await pixel(page, -3.7, -3.5), [255, 0, 255]), 'nothing between the instances');

  // ---- the agent removed: gone from the state frames and the canvas
  await ok(tcp, 'remove_agent', { name: 'walker' });
  await until(async () => (await page.evaluate(() => window.pa.state.agents.length)) === 0 &&
    !close(await pixel(page, pa[1], pa[2]), [150, 60, 200]), 'remove_agent takes it off the page');
  check(page.errors.length === 0, `no page errors (${page.errors.join('; ')})`);
  if (process.env.PA_WEB_SCREENSHOTS) {
    await page.screenshot({ path: path.join(process.env.PA_WEB_SCREENSHOTS, 'web-viewer-scene.png') });
  }
});
