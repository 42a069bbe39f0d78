// The live viewer in a real chromium against a real stack: it shows what a
// TCP client sees, its buttons and tools act through JSON v2 requests (seen
// over TCP), dragging a robot teleports it, WASD drives it, and an error
// shows as its code.
import path from 'node:path';
import { startStack, stopStack, browser, tcpClient, run, check, until } from './harness.mjs';

const near = (a, b, tol) => Math.abs(a - b) <= tol;

// Paused: the page's newest frame and a TCP client's get_state agree.
async function sameAsTcp(page, tcp) {
  const ts = await tcp.request('get_state', { robot: 0 });
  const seen = await until(async () => {
    const s = await page.evaluate(() => window.pa.state);
    return s.tick === ts.data.tick ? s : null;
  }, 'page reaches the tick a TCP client read', 1000);
  const r0 = seen.robots.find((r) => r[0] === 0);
  check(near(r0[1], ts.data.pose[0], 1e-3) && near(r0[2], ts.data.pose[1], 1e-3) && near(r0[3], ts.data.pose[2], 1e-4),
    `page pose = TCP pose (${r0.slice(1, 4)} vs ${ts.data.pose})`);
  check(near(seen.sim_time, ts.data.sim_time, 1e-6), 'page sim time = TCP sim time');

}

// The view shows the whole map, centred (what the fit button and a new map do).
const fitted = (page) => page.evaluate(() => {
  const m = window.pa.map, v = window.pa.view, c = document.getElementById('view');
  const w = m.width * m.resolution, h = m.height * m.resolution;
  const s = Math.min(c.clientWidth / w, c.clientHeight / h) * 0.95;
  return Math.abs(v.cx - (m.origin[0] + w / 2)) < 1e-6 && Math.abs(v.cy - (m.origin[1] + h / 2)) < 1e-6 &&
    Math.abs(v.scale - s) < 1e-6;
});

// The longest step of robot id's trail [m]: a teleport must not be one.
const longestStep = (page, id) => page.evaluate((r) => {
  const t = window.pa.trails.get(r) ?? [];
  let m = 0;
  for (let i = 1; i < t.length; i++) m = Math.max(m, Math.hypot(t[i][0] - t[i - 1][0], t[i][1] - t[i - 1][1]));
  return m;
}, id);

run(async () => {
  const st = await startStack();
  const tcp = await tcpClient(st.tcpPort);
  const page = await browser();
  await page.goto(`${st.url}/`);
  await until(() => page.evaluate(() => !!(window.pa?.state && window.pa.map && window.pa.world.robots.length)),
    'viewer gets state, map and world over /ws');
  await until(() => page.evaluate(() => window.pa.scans.size > 0), 'viewer gets binary scans');
  await until(() => page.evaluate(() => window.pa.status?.length === 4), 'viewer shows the 4 processes');
  const procs = await page.locator('#procs').innerText();
  check(/sim\s+up/.test(procs) && /netgw\s+up/.test(procs), 'process table: sim and netgw up');
  check(!(await page.locator('#hud').isVisible()), 'no empty HUD box before the mouse is on the map');
  check(await fitted(page), 'the map is fitted at the start');

  // looks like a robotics tool: toolbar of icon buttons, readable type, legend,
  // grid, axes at the origin, scale bar, robot labels (canvas pixels)
  const bar = await page.evaluate(() => [...document.querySelectorAll('#toolbar button')].map((b) => {
    const r = b.getBoundingClientRect(), i = b.querySelector('i');
    return { id: b.id || b.dataset.tool, h: Math.round(r.height), icon: !!i && (i.querySelector('svg') || i.textContent.trim()) ? 1 : 0 };
  }));
  check(bar.length >= 10 && bar.every((b) => b.icon && b.h === bar[0].h), `toolbar: ${bar.length} buttons, each with an icon, one height`);
  const fs = await page.evaluate(() => parseFloat(getComputedStyle(document.body).fontSize));
  check(fs >= 14, `readable type (${fs} px)`);
  const legend = await page.locator('#legend').innerText();
  check(await page.locator('#legend').isVisible() && /laser/.test(legend) && /agent/.test(legend) && /axis/.test(legend), 'a legend over the map');
  await page.click('#legendtoggle');
  await until(async () => !(await page.locator('#legendbody').isVisible()), 'the legend folds away');
  await page.click('#legendtoggle');
  await until(() => page.locator('#legendbody').isVisible(), 'and opens again');
  await page.uncheck('#showrays');
  const px = (x, y) => page.evaluate(([sx, sy]) => [...document.getElementById('view').getContext('2d').getImageData(sx, sy, 1, 1).data], [x, y]);
  const wpx = async (x, y) => { const [sx, sy] = await page.evaluate(([a, b]) => window.pa.toScreen(a, b), [x, y]); return px(Math.round(sx), Math.round(sy)); };
  const near3 = (c, w, tol = 40) => w.every((v, i) => Math.abs(c[i] - v) <= tol);
  const len = await until(() => page.evaluate(() => window.pa.axisLen), 'axes drawn');
  await until(async () => near3(await wpx(len * 0.6, 0), [225, 29, 72]), `x axis red at the origin (${len} m)`);
  await until(async () => near3(await wpx(0, len * 0.6), [22, 163, 74]), 'y axis green at the origin');
  const sb = await page.evaluate(() => ({ ...window.pa.scaleBar, scale: window.pa.view.scale }));
  check(Math.abs(sb.px - sb.metres * sb.scale) < 1e-6 && sb.px >= 80, `scale bar ${sb.text} = ${sb.px.toFixed(1)} px`);
  check(near3(await px(Math.round((sb.x0 + sb.x1) / 2), Math.round(sb.y)), [29, 35, 48]), 'scale bar drawn');
  const lab = await page.evaluate(() => window.pa.labels?.find((l) => l.robot === 0));
  const name0 = await page.evaluate(() => window.pa.world.robots.find((r) => r.id === 0).name);
  check(lab?.text === name0, `robot 0 labelled ${name0}`);
  check((await px(Math.round(lab.x + 2), Math.round(lab.y + lab.h / 2))).slice(0, 3).every((v) => v > 200), 'the label plate drawn');
  // a grid line on a free cell: darker than the cells beside it
  const g = await page.evaluate(() => {
    const m = window.pa.map, st = window.pa.gridStep, res = m.resolution;
    const free = (x, y) => { const c = Math.floor((x - m.origin[0]) / res), r = Math.floor((y - m.origin[1]) / res);
      return c >= 0 && r >= 0 && c < m.width && r < m.height && m.cells[r * m.width + c] === 0; };
    const robots = window.pa.state.robots;
    for (let i = -20; i <= 20; i++) {
      for (let y = m.origin[1] + 0.5; y < m.origin[1] + m.height * res; y += 0.25) {
        const x = i * st;
        if (Math.abs(x) < 0.3 || Math.abs(y) < 0.3) continue; // off the axes
        if (![-0.2, 0, 0.2].every((d) => free(x + d, y) && free(x, y + d))) continue;
        if (robots.some((r) => Math.hypot(r[1] - x, r[2] - y) < 2.5)) continue; // clear of robots and labels
        const [sx, sy] = window.pa.toScreen(x, y), sb = window.pa.scaleBar;
        if (sx > sb.x0 - 20 && sy > sb.y - 30) continue; // not under the scale bar
        return [Math.round(sx), Math.round(sy), x, y];
      }
    }
    return null;
  });
  check(g, `a free spot on a grid line (${g}, every ${await page.evaluate(() => window.pa.gridStep)} m)`);
  const on = await px(g[0], g[1]), off = await px(g[0] + 4, g[1]);
  check(off[0] > 230 && off[0] - on[0] >= 20, `grid line drawn (${on.slice(0, 3)} on the line, ${off.slice(0, 3)} beside)`);
  // the dark theme: panels and the canvas turn dark, the choice is kept
  await page.click('#theme');
  await until(() => page.evaluate(() => document.body.classList.contains('dark')), 'theme button: dark');
  const sideBg = await page.evaluate(() => getComputedStyle(document.querySelector('#side section')).backgroundColor);
  check(/rgb\((\d+), (\d+), (\d+)\)/.exec(sideBg).slice(1).every((v) => Number(v) < 60), `dark panels (${sideBg})`);
  await until(async () => (await px(Math.round(sb.x0 - 4), Math.round(sb.y))).slice(0, 3).every((v) => v < 60), 'the scale bar plate turns dark');
  if (process.env.PA_WEB_SCREENSHOTS) {
    await page.screenshot({ path: path.join(process.env.PA_WEB_SCREENSHOTS, 'web-viewer-dark.png') });
  }
  await page.reload();
  await until(() => page.evaluate(() => document.body.classList.contains('dark') && window.pa?.state), 'dark kept after a reload');
  await page.click('#theme');
  await until(() => page.evaluate(() => !document.body.classList.contains('dark')), 'theme button: light again');
  await page.check('#showrays');

  // pause: the page and a TCP client then see the same frozen world
  await page.click('#pause');
  await until(async () => (await tcp.request('get_status', {}, 'sim_control')).data?.paused === true,
    'pause button pauses the sim (get_status over TCP)');
  await until(() => page.evaluate(() => window.pa.state.paused), 'page shows paused');
  await sameAsTcp(page, tcp);

  // step: one tick while paused
  const t0 = (await tcp.request('get_state', { robot: 0 })).data.tick;
  await page.click('#step');
  await until(async () => (await tcp.request('get_state', { robot: 0 })).data.tick === t0 + 1, 'step button advances one tick');

  // drag robot 0 to (0.8, 0.4): a teleport seen over TCP
  const box = await page.locator('#view').boundingBox();
  const [sx, sy] = await page.evaluate(() => { const r = window.pa.state.robots.find((q) => q[0] === 0); return window.pa.toScreen(r[1], r[2]); });
  const [tx, ty] = await page.evaluate(() => window.pa.toScreen(0.8, 0.4));
  await page.mouse.move(box.x + sx, box.y + sy);
  await page.mouse.down();
  await page.mouse.move(box.x + (sx + tx) / 2, box.y + (sy + ty) / 2, { steps: 4 });
  await page.mouse.move(box.x + tx, box.y + ty, { steps: 4 });
  await page.mouse.up();
  const moved = await until(async () => {
    const p = (await tcp.request('get_pose', { robot: 0 })).data.pose;
    return near(p[0], 0.8, 0.05) && near(p[1], 0.4, 0.05) ? p : null;
  }, 'dragging the robot teleports it (get_pose over TCP)');
  await until(() => page.evaluate(() => window.pa.lastReply?.action === 'set_pose' && window.pa.lastReply.success), `page got set_pose ok (pose ${moved})`);
  await until(() => page.evaluate(() => { const r = window.pa.state.robots.find((q) => q[0] === 0); return Math.hypot(r[1] - 0.8, r[2] - 0.4) < 0.05; }),
    'the page shows the teleport');
  const step = await longestStep(page, 0);
  check(step < 0.1 && (await page.evaluate(() => window.pa.trailCuts)) > 0, `the trail is cut at the teleport (longest step ${step.toFixed(3)} m)`);

  // keyboard: W held drives forward, release stops
  await page.click('#resume');
  await until(async () => (await tcp.request('get_status', {}, 'sim_control')).data?.paused === false, 'resume button');
  const x0 = (await tcp.request('get_pose', { robot: 0 })).data.pose[0];
  await page.locator('#view').focus();
  await page.keyboard.down('w');
  await until(async () => (await tcp.request('get_state', { robot: 0 })).data.twist[0] > 0.2, 'W held: the robot drives forward');
  // the robot panel's plots: v over time in its colour, the scan's returns
  const colourCount = (id, rgb) => page.evaluate(([cid, c]) => {
    const cv = document.getElementById(cid), d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - c[0]) + Math.abs(d[i + 1] - c[1]) + Math.abs(d[i + 2] - c[2]) < 40) n++;
    return n;
  }, [id, rgb]);
  await until(() => page.evaluate(() => Math.max(...window.pa.twist.v) > 0.2 && window.pa.twistPlot.n > 3), 'the v/w plot holds the drive');
  await until(async () => (await colourCount('twistplot', [37, 99, 235])) > 20, 'v drawn on the plot in its colour');
  await until(() => page.evaluate(() => window.pa.scanPlot.points > 20), 'the scan plot has the returns');
  await until(async () => (await colourCount('scanplot', [220, 38, 38])) > 40, 'scan returns drawn on the scan plot');
  await until(async () => (await tcp.request('get_pose', { robot: 0 })).data.pose[0] > x0 + 0.08, 'W held: it keeps driving');
  await page.keyboard.up('w');
  await until(async () => near((await tcp.request('get_state', { robot: 0 })).data.twist[0], 0, 1e-3), 'W released: the robot stops');
  const x1 = (await tcp.request('get_pose', { robot: 0 })).data.pose[0];
  check(x1 > x0 + 0.05, `it moved forward (${x0} -> ${x1})`);
  await page.keyboard.down('ArrowLeft');
  await until(async () => (await tcp.request('get_state', { robot: 0 })).data.twist[2] > 0.5, 'left arrow turns left');
  await page.keyboard.up('ArrowLeft');

  // draw a box obstacle; it exists for a TCP client; then remove it
  await page.click('#tools [data-tool=box]');
  const [bx0, by0] = await page.evaluate(() => window.pa.toScreen(-1.0, -0.6));
  const [bx1, by1] = await page.evaluate(() => window.pa.toScreen(-0.6, -0.3));
  await page.mouse.move(box.x + bx0, box.y + by0);
  await page.mouse.down();
  await page.mouse.move(box.x + bx1, box.y + by1, { steps: 4 });
  await page.mouse.up();
  const ob = await until(async () => (await tcp.request('list_obstacles')).data.obstacles?.find((o) => o.name.startsWith('web')),
    'drawn box is an obstacle for a TCP client');
  check(near(ob.pose[0], -0.8, 0.05) && near(ob.pose[1], -0.45, 0.05), `at the drawn place (${ob.pose})`);
  await until(() => page.evaluate(() => window.pa.world.obstacles.some((o) => o.name.startsWith('web'))), 'page shows it');
  await page.click('#tools [data-tool=remove]');
  const [cx, cy] = await page.evaluate(() => window.pa.toScreen(-0.8, -0.45));
  await page.mouse.click(box.x + cx, box.y + cy);
  await until(async () => !(await tcp.request('list_obstacles')).data.obstacles.some((o) => o.name.startsWith('web')),
    'remove tool removes it');

  // an error shows as its code
  await page.fill('#speed', '-2');
  await page.click('#setspeed');
  const err = await until(async () => page.locator('#error').innerText(), 'error shown');
  check(/set_time_scale: invalid/.test(err), `error code on the page: ${err}`);
  // speed 2 through the button
  await page.fill('#speed', '2');
  await page.click('#setspeed');
  await until(() => page.evaluate(() => window.pa.state.speed === 2), 'speed button: the page shows x2');

  // after driving and turning, paused again: the same pose on both sides
  await page.click('#pause');
  await until(() => page.evaluate(() => window.pa.state.paused), 'paused again');
  await sameAsTcp(page, tcp);
  check(await page.evaluate(() => window.pa.state.robots[0][3] !== 0), 'robot 0 has turned');

  // the head camera: pa-render renders robot 0 once the page asks
  await page.check('#showcam');
  await until(() => page.evaluate(() => { const i = document.getElementById('cam'); return i.naturalWidth === 640 && i.naturalHeight === 480; }),
    'head camera image of the selected robot (640 x 480 JPEG)', 20000);

  // a TCP client's nav drawing shows up on the page
  await tcp.request('set_nav_path', { robot: 0, path: [[0, 0], [1, 1], [2, 1]] });
  await until(() => page.evaluate(() => window.pa.nav.overlays.some((o) => o.path.length === 3)), 'page shows nav drawings');
  check(page.errors.length === 0, `no page errors (${page.errors})`);
  if (process.env.PA_WEB_SCREENSHOTS) {
    await page.waitForTimeout(500);
    await page.screenshot({ path: path.join(process.env.PA_WEB_SCREENSHOTS, 'web-viewer.png') });
  }

  // follow: the view keeps the selected robot in its centre as it moves
  await page.click('#follow');
  for (const [x, y] of [[0.2, 0.1], [0.8, 0.4]]) {
    check((await tcp.request('set_pose', { robot: 0, pose: [x, y, 0] })).success, `robot 0 teleported to (${x}, ${y}) over TCP`);
    await until(() => page.evaluate(([a, b]) => Math.hypot(window.pa.view.cx - a, window.pa.view.cy - b) < 0.01, [x, y]),
      `follow: the view centre is the robot (${x}, ${y})`);
  }

  // zoomed and panned away, the fit button shows the whole map again
  await page.mouse.move(box.x + 100, box.y + 100);
  for (let i = 0; i < 3; i++) await page.mouse.wheel(0, -100);
  await until(async () => !(await fitted(page)), 'wheel zooms away from the fitted view');
  check(/x -?\d+\.\d+ m, y/.test(await page.locator('#hud').innerText()), 'the HUD shows the mouse position on the map');
  await page.click('#fit');
  await until(() => fitted(page), 'fit button fits the map again');
  // a generated map of another size: the view fits it, trails start anew
  await page.mouse.move(box.x + 100, box.y + 100);
  await page.mouse.wheel(0, -100);
  await until(async () => !(await fitted(page)), 'zoomed again');
  const gm = await tcp.request('generate_map', { width: 30, height: 6, resolution: 0.1, seed: 5, rooms: [3, 1] });
  check(gm.success, `generate_map 30 x 6 m (${JSON.stringify(gm.error ?? '')})`);
  await until(() => page.evaluate(() => window.pa.map.width === 300 && window.pa.map.height === 60), 'the page gets the new map');
  await until(() => fitted(page), 'the view re-fits the new map');
  check((await longestStep(page, 0)) < 0.1, 'no trail drawn across the world change');

  // the stack stopped: the page says so over the map and keeps no stale figures
  check(/: ok$/.test(await page.locator('#ok').innerText()), 'a request answered ok is shown');
  await stopStack(st);
  await until(() => page.locator('#offline').isVisible(), 'a disconnected overlay covers the map');
  check(/disconnected/.test(await page.locator('#conn').innerText()), 'the connection line says disconnected');
  for (const id of ['#runstate', '#rtf', '#simtime']) {
    const t = await page.locator(id).innerText();
    check(!/running|paused|\d/.test(t), `${id} shows no stale figure (${t})`);
  }
  check(!/\bup\b/.test(await page.locator('#procs').innerText()), 'no process shown "up"');
  await page.click('#pause');
  await until(async () => /pause: not connected/.test(await page.locator('#error').innerText()), 'pause: not connected');
  check((await page.locator('#ok').innerText()) === '', 'no stale "ok" beside the error');
});
