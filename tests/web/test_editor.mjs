// The map editor in a real chromium: draw a room with the drawing tools,
// undo/redo, export map.yaml + PNG, load the export with pa-map and compare
// every cell; then "Run it" with a robot placed in the room and check that
// the simulator's laser sees the walls that were drawn.
import fs from 'node:fs';
import path from 'node:path';
import { startStack, stopStack, browser, tcpClient, run, check, until, paMap } from './harness.mjs';

// Mouse drag between two cells of the editor's grid.
async function dragCells(page, c0, r0, c1, r1) {
  const [x0, y0] = await page.evaluate(([c, r]) => window.editor.cellToScreen(c, r), [c0, r0]);
  const [x1, y1] = await page.evaluate(([c, r]) => window.editor.cellToScreen(c, r), [c1, r1]);
  const box = await page.locator('#view').boundingBox();
  await page.mouse.move(box.x + x0, box.y + y0);
  await page.mouse.down();
  await page.mouse.move(box.x + (x0 + x1) / 2, box.y + (y0 + y1) / 2, { steps: 3 });
  await page.mouse.move(box.x + x1, box.y + y1, { steps: 3 });
  await page.mouse.up();
}

const cellsOf = (page) => page.evaluate(() => Array.from(window.editor.cells));

// P5 PGM as pa-map convert writes it: map_saver's 0 / 254 / 205
function readPgm(file) {
  const b = fs.readFileSync(file);
  const head = b.toString('latin1', 0, 64).split(/\s+/);
  const w = Number(head[1]), h = Number(head[2]);
  const hdrLen = b.indexOf('\n', b.indexOf('\n', b.indexOf('\n') + 1) + 1) + 1;
  return { w, h, px: b.subarray(hdrLen, hdrLen + w * h) };
}

run(async () => {
  const st = await startStack();
  const page = await browser();
  await page.goto(`${st.url}/editor`);
  await page.waitForFunction(() => window.editor && window.editor.cells);
  const bar = await page.evaluate(() => [...document.querySelectorAll('#toolbar button, #side button')].map((b) => {
    const i = b.querySelector('i');
    return { h: Math.round(b.getBoundingClientRect().height), icon: !!i && i.textContent.trim() !== '' };
  }));
  await until(async () => (await page.locator('#conn').innerText()) === 'connected', 'the editor shows it is connected');
  check(bar.length >= 17 && bar.every((b) => b.icon && b.h === bar[0].h), `editor buttons: ${bar.length}, each with an icon, one height`);

  // "load the running map" loads the running world: map, robots where they
  // are, static obstacles with their turn
  const tcp0 = await tcpClient(st.tcpPort);
  const sp = await tcp0.request('spawn_obstacle', { name: 'crate', shape: 'box', pose: [1.5, -1, 0.3], size: [0.4, 0.2] });
  check(sp.success, 'a box obstacle spawned over TCP');
  check((await tcp0.request('set_pose', { robot: 0, pose: [0.7, 0.3, 1.0] })).success, 'robot 0 teleported over TCP');
  await until(() => page.evaluate(() => {
    const r = window.editor.serverState?.robots.find((q) => q[0] === 0);
    return window.editor.serverMap && window.editor.serverWorld?.obstacles.some((o) => o.name === 'crate') &&
      r && Math.abs(r[1] - 0.7) < 0.02;
  }), 'the editor has the running world');
  await page.click('#fromserver');
  const lw = await page.evaluate(() => ({ robots: window.editor.robots, obstacles: window.editor.obstacles,
    running: window.editor.serverWorld.robots.length, W: window.editor.W, mapW: window.editor.serverMap.width }));
  const crate = lw.obstacles.find((o) => o.name === 'crate');
  const r0 = lw.robots[0];
  check(lw.W === lw.mapW && lw.robots.length === lw.running && lw.running >= 1, `the running map and all ${lw.running} robots loaded`);
  check(Math.abs(r0.pose[0] - 0.7) < 0.02 && Math.abs(r0.pose[1] - 0.3) < 0.02 && Math.abs(r0.pose[2] - 1.0) < 0.02,
    `robot 0 where it runs (${r0.pose})`);
  check(crate && Math.abs(crate.x - 1.5) < 1e-3 && Math.abs(crate.theta - 0.3) < 1e-3 && Math.abs(crate.size[0] - 0.4) < 1e-3,
    'the spawned box loaded with its pose, turn and size');
  check(/loaded the running world/.test(await page.locator('#ok').innerText()), 'the editor says it loaded the running world');

  // 6 x 4 m at 5 cm: 120 x 80 cells, origin at the centre
  await page.fill('#wm', '6');
  await page.fill('#hm', '4');
  await page.fill('#res', '0.05');
  await page.click('#new');
  const dims = await page.evaluate(() => [window.editor.W, window.editor.H, ...window.editor.origin]);
  check(dims.join() === '120,80,-3,-2,0', `new map is 120 x 80, origin [-3, -2, 0] (${dims})`);

  // the room: walls with the rect tool (cells 10..110 x 10..70)
  await page.click('#tools [data-tool=rect]');
  await dragCells(page, 10, 10, 110, 70);
  // a filled block, a line, a circle, an unknown patch
  await page.click('#tools [data-tool=frect]');
  await dragCells(page, 20, 20, 26, 30);
  await page.click('#tools [data-tool=line]');
  await dragCells(page, 30, 60, 50, 60);
  await page.click('#tools [data-tool=circle]');
  await dragCells(page, 90, 25, 94, 25);
  await page.click('#tools [data-tool=unknown]');
  await page.fill('#brush', '3');
  await dragCells(page, 2, 2, 8, 2);
  // flood fill outside the room makes it occupied; the inside stays free
  await page.click('#tools [data-tool=fill]');
  await dragCells(page, 4, 75, 4, 75);
  let cells = await cellsOf(page);
  const at = (c, r) => cells[r * 120 + c];
  check(at(10, 10) === 100 && at(110, 70) === 100 && at(60, 10) === 100 && at(10, 40) === 100, 'rect walls drawn');
  check(at(60, 40) === 0, 'room inside is free');
  check(at(23, 25) === 100 && at(40, 60) === 100 && at(94, 25) === 100, 'filled rect, line and circle drawn');
  check(at(5, 2) === -1, 'unknown brush drew unknown cells');
  check(at(4, 75) === 100 && at(0, 0) === 100 && at(119, 79) === 100, 'flood fill filled the outside');
  check(at(92, 25) === 0, 'circle is an outline');

  // undo / redo: a pencil dot in the room comes and goes
  const before = await cellsOf(page);
  await page.click('#tools [data-tool=pencil]');
  await page.fill('#brush', '1');
  await dragCells(page, 70, 50, 70, 50);
  check((await cellsOf(page))[50 * 120 + 70] === 100, 'pencil draws');
  await page.click('#undo');
  check((await cellsOf(page)).join() === before.join(), 'undo restores the grid exactly');
  await page.click('#redo');
  check((await cellsOf(page))[50 * 120 + 70] === 100, 'redo draws it again');
  await page.click('#undo');
  cells = await cellsOf(page);

  // export: two downloads, loaded by pa-map and compared cell by cell
  await page.fill('#name', 'room');
  const got = [];
  page.on('download', (d) => got.push(d));
  await page.click('#export');
  await until(() => got.length === 2, 'export downloads room.yaml and room.png');
  for (const d of got) await d.saveAs(path.join(st.tmp, d.suggestedFilename()));
  const yaml = fs.readFileSync(path.join(st.tmp, 'room.yaml'), 'utf8');
  check(/^image: room\.png$/m.test(yaml) && /^origin: \[-3, -2, 0\]$/m.test(yaml) && /^mode: trinary$/m.test(yaml) &&
    /^negate: 0$/m.test(yaml) && /^occupied_thresh: 0.65$/m.test(yaml) && /^free_thresh: 0.196$/m.test(yaml),
  'map.yaml has image, resolution, origin, negate, thresholds, mode');
  const info = paMap('check', path.join(st.tmp, 'room.yaml'));
  check(/size: 120 x 80 cells/.test(info) && /resolution: 0.05 m/.test(info) && /origin: \[-3, -2, 0\]/.test(info),
    'pa-map check reads the export: 120 x 80, 0.05 m, origin [-3, -2, 0]');
  paMap('convert', path.join(st.tmp, 'room.yaml'), path.join(st.tmp, 'back.yaml'), '--image', path.join(st.tmp, 'back.pgm'));
  const pgm = readPgm(path.join(st.tmp, 'back.pgm'));
  check(pgm.w === 120 && pgm.h === 80, 'pa-map convert keeps the size');
  let diff = 0, occ = 0, unk = 0;
  for (let i = 0; i < cells.length; i++) {
    const v = pgm.px[i] === 0 ? 100 : pgm.px[i] === 254 ? 0 : pgm.px[i] === 205 ? -1 : 77;
    if (v !== cells[i]) diff++;
    if (v === 100) occ++;
    if (v === -1) unk++;
  }
  check(diff === 0 && occ > 300 && unk > 0, `pa-map loads every cell as drawn (${diff} differ; ${occ} occupied, ${unk} unknown)`);

  // open: the PNG export and pa-map's PGM come back as the same cells
  for (const [yaml, img] of [['room.yaml', 'room.png'], ['back.yaml', 'back.pgm']]) {
    await page.click('#new'); // a blank grid first, so the check means something
    await page.setInputFiles('#open', [path.join(st.tmp, yaml), path.join(st.tmp, img)]);
    await until(async () => (await page.locator('#ok').innerText()).startsWith(`opened ${yaml}`), `open ${yaml} + ${img}`);
    const again = await cellsOf(page);
    const o = await page.evaluate(() => [window.editor.W, window.editor.H, window.editor.res, ...window.editor.origin]);
    check(again.join() === cells.join() && o.join() === '120,80,0.05,-3,-2,0', `${img} opens as the drawn grid, size and origin`);
  }
  await page.fill('#name', 'room');

  // an exported map starts with --map_yaml even with its centre on a wall:
  // the robot is placed on the free cell nearest (0, 0)
  await page.click('#tools [data-tool=frect]');
  await dragCells(page, 54, 34, 66, 46); // x -0.3 .. 0.35, y -0.35 .. 0.3
  await page.fill('#name', 'blocked');
  const before2 = got.length;
  await page.click('#export');
  await until(() => got.length === before2 + 2, 'export blocked.yaml + blocked.png');
  for (const d of got.slice(before2)) await d.saveAs(path.join(st.tmp, d.suggestedFilename()));
  const st2 = await startStack(['--map_yaml', path.join(st.tmp, 'blocked.yaml')]);
  const tcp2 = await tcpClient(st2.tcpPort);
  const mi2 = (await tcp2.request('get_map_info')).data;
  check(mi2.width === 120 && mi2.height === 80, 'the stack runs the exported map');
  const p2 = (await tcp2.request('get_pose', { robot: 0 })).data.pose;
  const s2 = (await tcp2.request('get_state', { robot: 0 })).data;
  check(p2[0] > 0.35 + 0.17 || p2[0] < -0.3 - 0.17 || p2[1] > 0.3 + 0.17 || p2[1] < -0.35 - 0.17,
    `robot 0 starts off the wall at the centre (${p2.map((v) => v.toFixed(2))}; bumped ${s2.bumped})`);
  await stopStack(st2);
  await page.click('#undo');
  await page.fill('#name', 'room');

  // Run it: a robot at (0, 0) facing east in the room
  await page.click('#wtools [data-tool=robot]');
  const [rx, ry] = await page.evaluate(() => window.editor.worldToScreen(0, 0));
  const box = await page.locator('#view').boundingBox();
  await page.mouse.click(box.x + rx, box.y + ry);
  check(await page.evaluate(() => window.editor.robots.length === 1), 'robot placed');
  // a box obstacle south of it: x -0.2 .. 0.2, y -1.2 .. -0.8
  await page.click('#wtools [data-tool=obox]');
  const [ox0, oy0] = await page.evaluate(() => window.editor.worldToScreen(-0.2, -0.8));
  const [ox1, oy1] = await page.evaluate(() => window.editor.worldToScreen(0.2, -1.2));
  await page.mouse.move(box.x + ox0, box.y + oy0);
  await page.mouse.down();
  await page.mouse.move(box.x + ox1, box.y + oy1, { steps: 3 });
  await page.mouse.up();
  check(await page.evaluate(() => window.editor.obstacles.length === 1), 'box obstacle placed');
  // the world YAML export loads with pa-map next to the map files
  const wdl = page.waitForEvent('download');
  await page.click('#exportworld');
  const wd = await wdl;
  await wd.saveAs(path.join(st.tmp, wd.suggestedFilename()));
  const winfo = paMap('check', path.join(st.tmp, 'room.world.yaml'));
  check(/robots: 1, obstacles: 1/.test(winfo) && /size: 120 x 80 cells/.test(winfo), 'pa-map check reads the exported world YAML');
  await page.click('#run');
  const r = await until(() => page.evaluate(() => window.editor.lastRun), 'Run it answered');
  check(r.success && r.action === 'set_scenario', `set_scenario ok (${JSON.stringify(r.error ?? '')})`);
  const tcp = await tcpClient(st.tcpPort);
  const mi = await tcp.request('get_map_info');
  check(mi.data.width === 120 && mi.data.height === 80 && mi.success, 'the sim runs the drawn map (get_map_info)');
  // The east wall's inner face: cell column 110 starts at x = -3 + 110 * 0.05 = 2.5 m.
  // a scan taken in the new world: two scans after the first one seen
  const seq0 = (await tcp.request('get_state', { robot: 0 })).data?.sensors?.scan?.seq;
  const s = await until(async () => {
    const g = await tcp.request('get_state', { robot: 0 });
    const seq = g.data?.sensors?.scan?.seq;
    return seq !== undefined && Math.abs(seq - seq0) >= 2 ? g : null;
  }, 'a scan from the robot in the new world');
  const sc = s.data.sensors.scan;
  const i0 = Math.round(-sc.angle_min / sc.angle_increment);
  const ahead = sc.ranges[i0];
  check(Math.abs(ahead - 2.5) < 0.06, `laser straight ahead sees the east wall at 2.5 m (${ahead})`);
  // north: image row 10 (row 0 north) spans y 1.45 .. 1.5 m; its face is at 1.45
  const iN = Math.round((Math.PI / 2 - sc.angle_min) / sc.angle_increment);
  check(Math.abs(sc.ranges[iN] - 1.45) < 0.06, `laser to the north sees the wall at 1.45 m (${sc.ranges[iN]})`);
  // west: column 10 ends at x = -3 + 11 * 0.05 = -2.45 m
  check(Math.abs(sc.ranges[0] - 2.45) < 0.06, `laser to the west sees the wall at 2.45 m (${sc.ranges[0]})`);
  // south: the placed box's north face at y = -0.8 (its edges are within a pixel)
  const iS = Math.round((-Math.PI / 2 - sc.angle_min) / sc.angle_increment);
  check(Math.abs(sc.ranges[iS] - 0.8) < 0.06, `laser to the south sees the placed box at 0.8 m (${sc.ranges[iS]})`);
  check(page.errors.length === 0, `no page errors (${page.errors})`);
  if (process.env.PA_WEB_SCREENSHOTS) {
    await page.screenshot({ path: path.join(process.env.PA_WEB_SCREENSHOTS, 'web-editor.png') });
  }
});
