// viewer.js - the live viewer: the map, robots (heading, trails), laser rays,
// obstacles, agents (moving obstacles), the SSL ball, visual objects and
// navigation drawings from /ws, and every action on the world
// as the JSON v2 request any client would send (errors show as their codes).
import { Session, cellGrey, fmt, setupTheme, theme } from './common.js';
import { recordTwist, drawTwist, drawScan } from './plots.js';

const $ = (id) => document.getElementById(id);
const canvas = $('view');
const ctx = canvas.getContext('2d');

// What the page knows, also read by the browser tests (window.pa).
const pa = {
  state: null, world: { robots: [], obstacles: [] }, map: null, nav: { overlays: [] },
  scans: new Map(), trails: new Map(), selected: 0, lastReply: null, lastError: null,
  frames: 0, worldFrames: 0, status: null, visuals: [], connected: false, trailCuts: 0,
  twist: { robot: -1, t: [], v: [], w: [] }, follow: false,
};
const AGENT_FILL = 'rgb(150,60,200)'; // agents: violet, static obstacles brown
const BALL_FILL = 'rgb(255,140,0)';
window.pa = pa;

const view = { cx: 0, cy: 0, scale: 40, fitted: false };
pa.view = view;
const DASH = '\u2014';
let mapCanvas = null;
let tool = 'move';
let drag = null;

const session = new Session({
  onOpen: () => setConnected(true),
  onClose: () => setConnected(false),
  onScans: (scans) => { for (const s of scans) pa.scans.set(s.robot, s); },
  // a new map (generate_map, set_map, a restart): a new world, fitted anew
  onMap: (m) => { pa.map = m; mapCanvas = renderMap(m); pa.trails.clear(); view.fitted = false; fit(); worldInfo(); },
  onVisuals: (v) => { pa.visuals = v.visuals; worldInfo(); },
  onMessage: (m) => {
    if (m.type === 'state') onState(m);
    else if (m.type === 'world') onWorld(m);
    else if (m.type === 'nav') pa.nav = m;
    else if (m.type === 'status') showStatus(m.processes);
  },
});
pa.session = session;

// Connected or not: while down, every live figure is blanked and an overlay
// says so, so nothing stale passes for the running stack.
function setConnected(up) {
  pa.connected = up;
  document.body.classList.toggle('offline', !up);
  $('conn').textContent = up ? 'connected' : 'disconnected: reconnecting...';
  $('conn').className = up ? 'up' : 'down';
  if (up) return;
  pa.state = null;
  pa.status = null;
  pa.scans.clear();
  for (const id of ['simtime', 'rtf', 'runstate']) $(id).textContent = DASH;
  $('robotinfo').textContent = '';
  $('ok').textContent = '';
  const t = $('procs');
  while (t.rows.length > 1) t.deleteRow(1);
}

// A robot's trail is cut where it jumped (a teleport, a reset): farther
// than it could have driven since the last frame seen.
const MAX_SPEED = 6; // [m/s] faster than any robot drives
let lastSimTime = null;
function addTrails(m) {
  if (lastSimTime !== null && m.sim_time < lastSimTime) pa.trails.clear(); // reset
  const dt = lastSimTime === null ? 0 : Math.max(0, m.sim_time - lastSimTime);
  lastSimTime = m.sim_time;
  for (const r of m.robots) {
    const id = r[0];
    let t = pa.trails.get(id);
    if (!t) pa.trails.set(id, t = []);
    const last = t[t.length - 1];
    const d = last ? Math.hypot(last[0] - r[1], last[1] - r[2]) : 0;
    if (last && d > 0.25 + MAX_SPEED * dt) { t.length = 0; pa.trailCuts++; }
    if (!t.length || d > 0.02) {
      t.push([r[1], r[2]]);
      if (t.length > 400) t.shift();
    }
  }
}

// World frames: robots added or removed (a new scenario) start new trails.
function onWorld(m) {
  const key = (w) => w.robots.map((r) => `${r.id}:${r.name}`).join();
  if (key(m) !== key(pa.world)) pa.trails.clear();
  pa.world = m;
  pa.worldFrames++;
  fillRobotSelect();
  worldInfo();
}

// The world panel: the map's size and what is in the world.
function worldInfo() {
  const m = pa.map, w = pa.world;
  const agents = w.obstacles.filter((o) => o.agent).length;
  const rows = [
    ['map', m ? `${fmt(m.width * m.resolution, 1)} x ${fmt(m.height * m.resolution, 1)} m, ${m.resolution} m/cell` : DASH],
    ['robots', String(w.robots.length)],
    ['obstacles', `${w.obstacles.length - agents} static, ${agents} agents`],
    ['visuals', String(pa.visuals.length)],
  ];
  const el = $('worldinfo');
  el.innerHTML = '';
  for (const [k, v] of rows) {
    const a = document.createElement('span'), b = document.createElement('b');
    a.textContent = k;
    b.textContent = v;
    el.append(a, b);
  }
}

function onState(m) {
  pa.state = m;
  pa.frames++;
  addTrails(m);
  recordTwist(pa.twist, m, pa.selected);
  $('simtime').textContent = fmt(m.sim_time, 2);
  $('rtf').textContent = fmt(m.rtf, 2);
  $('runstate').textContent = m.paused ? 'paused' : `running x${m.speed}`;
  const r = robotState(pa.selected);
  $('robotinfo').textContent = r
    ? `pose ${fmt(r[1])}, ${fmt(r[2])}, ${fmt(r[3])} rad; v ${fmt(r[4])} m/s, w ${fmt(r[5])} rad/s${r[6] ? ', bumped' : ''}`
    : 'no such robot';
}

function robotState(id) { return pa.state?.robots.find((r) => r[0] === id); }
function robotInfo(id) { return pa.world.robots.find((r) => r.id === id); }

function fillRobotSelect() {
  const sel = $('robotsel');
  sel.innerHTML = '';
  for (const r of pa.world.robots) {
    const o = document.createElement('option');
    o.value = r.id;
    o.textContent = `${r.id}: ${r.name} (${r.drive})`;
    sel.appendChild(o);
  }
  sel.value = pa.selected;
}
$('robotsel').onchange = (e) => { pa.selected = Number(e.target.value); };

function showStatus(procs) {
  pa.status = procs;
  const t = $('procs');
  while (t.rows.length > 1) t.deleteRow(1);
  for (const p of procs) {
    const row = t.insertRow();
    // never started (--no-render): "off", and no figures where none exist
    const off = p.state === 'down' && !p.pid;
    const num = (v, d) => (off || !(v >= 0) ? DASH : fmt(v, d));
    const cells = [p.process, off ? 'off' : p.state, num(p.cpu_s, 1), num(p.rss_mb, 1), num(p.p99_ms, 2), off ? DASH : p.restarts];
    for (const v of cells) row.insertCell().textContent = v;
    row.className = `st-${off ? 'off' : p.state}`;
  }
}

// ---- requests: every action is a JSON v2 request ----------------------------

async function act(action, data = {}, type = 'command') {
  try {
    const r = await session.request(action, data, type);
    pa.lastReply = r;
    if (r.success) {
      pa.lastError = null;
      $('ok').textContent = `${action}: ok`;
      $('error').textContent = '';
    } else {
      pa.lastError = r.error;
      $('ok').textContent = '';
      $('error').textContent = `${action}: ${r.error.code}: ${r.error.message}`;
    }
    return r;
  } catch (e) {
    $('ok').textContent = '';
    $('error').textContent = `${action}: ${e.message}`;
    return null;
  }
}
pa.act = act;

$('pause').onclick = () => act('pause', {}, 'sim_control');
$('resume').onclick = () => act('resume', {}, 'sim_control');
$('step').onclick = () => act('step_n', { steps: 1 }, 'sim_control');
$('reset').onclick = () => { pa.trails.clear(); act('reset', {}, 'sim_control'); };
const setFollow = (on) => { pa.follow = on; $('follow').classList.toggle('on', on); };
$('fit').onclick = () => { setFollow(false); view.fitted = false; fit(); };
$('follow').onclick = () => setFollow(!pa.follow);
setupTheme($('theme'));
$('legendtoggle').onclick = () => $('legend').classList.toggle('closed');
$('setspeed').onclick = () => act('set_time_scale', { scale: Number($('speed').value) }, 'sim_control');
for (const b of document.querySelectorAll('#tools button')) {
  b.onclick = () => {
    tool = b.dataset.tool;
    for (const o of document.querySelectorAll('#tools button')) o.classList.toggle('on', o === b);
  };
}

// ---- keyboard drive: velocity held while a key is down ----------------------

const keys = new Set();
const KEYMAP = { w: 'f', arrowup: 'f', s: 'b', arrowdown: 'b', a: 'l', arrowleft: 'l', d: 'r', arrowright: 'r' };
let driving = false;
function driveCommand() {
  const info = robotInfo(pa.selected);
  const vmax = 0.5, wmax = 1.5;
  let v = 0, w = 0;
  if (keys.has('f')) v += vmax;
  if (keys.has('b')) v -= vmax;
  if (keys.has('l')) w += wmax;
  if (keys.has('r')) w -= wmax;
  if (info?.drive === 'omni') return { robot: pa.selected, vx: v, vy: 0, w };
  return { robot: pa.selected, v, w };
}
function sendDrive() {
  if (keys.size) { driving = true; act('set_velocity', driveCommand()); }
  else if (driving) { driving = false; act('stop', { robot: pa.selected }); }
}
window.addEventListener('keydown', (e) => {
  const k = KEYMAP[e.key.toLowerCase()];
  if (!k || e.target.tagName === 'INPUT') return;
  e.preventDefault();
  if (!keys.has(k)) { keys.add(k); sendDrive(); }
});
window.addEventListener('keyup', (e) => {
  const k = KEYMAP[e.key.toLowerCase()];
  if (!k) return;
  keys.delete(k);
  sendDrive();
});
window.addEventListener('blur', () => { keys.clear(); sendDrive(); });
// the command is re-sent while held, so a lost one does not stop the robot
setInterval(() => { if (keys.size) sendDrive(); }, 200);

// ---- the selected robot's head camera: JPEG from /api/camera, polled ----------

async function cameraLoop() {
  const img = $('cam');
  for (;;) {
    if ($('showcam').checked) {
      try {
        const r = await fetch(`/api/camera?robot=${pa.selected}`, { cache: 'no-store' });
        if (r.status === 200) {
          const url = URL.createObjectURL(await r.blob());
          await new Promise((res) => { img.onload = res; img.onerror = res; img.src = url; });
          if (img.dataset.url) URL.revokeObjectURL(img.dataset.url);
          img.dataset.url = url;
          img.style.display = '';
          pa.cameraSeq = Number(r.headers.get('X-Frame-Seq'));
        }
      } catch { /* the next turn retries */ }
    } else {
      img.style.display = 'none';
    }
    await new Promise((res) => setTimeout(res, 150));
  }
}
cameraLoop();

// ---- drawing -----------------------------------------------------------------

function renderMap(m) {
  const c = document.createElement('canvas');
  c.width = m.width;
  c.height = m.height;
  const cx = c.getContext('2d');
  const img = cx.createImageData(m.width, m.height);
  for (let gy = 0; gy < m.height; gy++) {
    const iy = m.height - 1 - gy; // grid row 0 is south, image row 0 north
    for (let x = 0; x < m.width; x++) {
      const g = cellGrey(m.cells[gy * m.width + x]);
      const o = 4 * (iy * m.width + x);
      img.data[o] = img.data[o + 1] = img.data[o + 2] = g;
      img.data[o + 3] = 255;
    }
  }
  cx.putImageData(img, 0, 0);
  return c;
}

function fit() {
  if (view.fitted || !pa.map || !canvas.clientWidth) return;
  const m = pa.map;
  const w = m.width * m.resolution, h = m.height * m.resolution;
  view.cx = m.origin[0] + w / 2;
  view.cy = m.origin[1] + h / 2;
  view.scale = Math.min(canvas.clientWidth / w, canvas.clientHeight / h) * 0.95;
  view.fitted = true;
}

const toScreen = (x, y) => [canvas.width / 2 + (x - view.cx) * view.scale, canvas.height / 2 - (y - view.cy) * view.scale];
const toWorld = (sx, sy) => [view.cx + (sx - canvas.width / 2) / view.scale, view.cy - (sy - canvas.height / 2) / view.scale];
pa.toScreen = toScreen; // the tests click where a robot is

function draw() {
  if (canvas.width !== canvas.clientWidth || canvas.height !== canvas.clientHeight) {
    canvas.width = canvas.clientWidth;
    canvas.height = canvas.clientHeight;
  }
  fit();
  const followed = pa.follow && robotState(pa.selected);
  if (followed) [view.cx, view.cy] = [followed[1], followed[2]];
  ctx.fillStyle = theme.canvas;
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  if (mapCanvas) {
    const m = pa.map;
    const [x0, y0] = toScreen(m.origin[0], m.origin[1] + m.height * m.resolution);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(mapCanvas, x0, y0, m.width * m.resolution * view.scale, m.height * m.resolution * view.scale);
  }
  drawGrid();
  drawField();
  drawAxes();
  const agentPose = new Map((pa.state?.agents ?? []).map((a) => [a[0], a]));
  for (const o of pa.world.obstacles) {
    let [x, y, th] = [o.x, o.y, o.theta];
    const agent = !!o.agent;
    if (agent) {
      const a = agentPose.get(o.slot);
      if (!a) continue; // gone since the world frame
      [x, y, th] = [a[1], a[2], a[3]];
    }
    ctx.fillStyle = agent ? AGENT_FILL : 'rgba(150,100,50,0.8)';
    const [sx, sy] = toScreen(x, y);
    ctx.save();
    ctx.translate(sx, sy);
    ctx.rotate(-th);
    ctx.beginPath();
    if (o.shape === 'circle') ctx.arc(0, 0, o.radius * view.scale, 0, 2 * Math.PI);
    else ctx.rect(-o.size[0] / 2 * view.scale, -o.size[1] / 2 * view.scale, o.size[0] * view.scale, o.size[1] * view.scale);
    ctx.fill();
    if (agent) { // a dark rim and a heading tick: it moves on its own
      const r = (o.shape === 'circle' ? o.radius : o.size[0] / 2) * view.scale;
      ctx.strokeStyle = '#303';
      ctx.lineWidth = 2;
      ctx.stroke();
      ctx.strokeStyle = '#fff';
      ctx.beginPath();
      ctx.moveTo(r / 2, 0);
      ctx.lineTo(Math.max(r, 5), 0);
      ctx.stroke();
    }
    ctx.restore();
  }
  drawVisuals();
  for (const ov of pa.nav.overlays) {
    ctx.strokeStyle = '#0a0';
    ctx.lineWidth = 2;
    ctx.beginPath();
    ov.path.forEach(([x, y], i) => { const [sx, sy] = toScreen(x, y); i ? ctx.lineTo(sx, sy) : ctx.moveTo(sx, sy); });
    ctx.stroke();
    ctx.fillStyle = '#0a0';
    for (const [x, y] of ov.waypoints) { const [sx, sy] = toScreen(x, y); ctx.fillRect(sx - 3, sy - 3, 6, 6); }
  }
  if ($('showtrails').checked) {
    ctx.strokeStyle = 'rgba(40,80,200,0.4)';
    ctx.lineWidth = 1;
    for (const t of pa.trails.values()) {
      ctx.beginPath();
      t.forEach(([x, y], i) => { const [sx, sy] = toScreen(x, y); i ? ctx.lineTo(sx, sy) : ctx.moveTo(sx, sy); });
      ctx.stroke();
    }
  }
  if ($('showrays').checked) {
    ctx.strokeStyle = 'rgba(220,30,30,0.35)';
    ctx.lineWidth = 1;
    for (const s of pa.scans.values()) {
      if (!robotState(s.robot)) continue;
      const [ox, oy] = toScreen(s.x, s.y);
      ctx.beginPath();
      for (let i = 0; i < s.ranges.length; i += s.ranges.length > 180 ? 2 : 1) {
        const r = s.ranges[i];
        if (!(r > 0) || r >= s.range_max) continue;
        const a = s.theta + s.angle_min + i * s.angle_increment;
        const [ex, ey] = toScreen(s.x + r * Math.cos(a), s.y + r * Math.sin(a));
        ctx.moveTo(ox, oy);
        ctx.lineTo(ex, ey);
      }
      ctx.stroke();
    }
  }
  for (const r of pa.state?.robots ?? []) {
    const info = robotInfo(r[0]);
    const rad = (info?.radius ?? 0.18) * view.scale;
    let [sx, sy] = toScreen(r[1], r[2]);
    if (drag?.robot === r[0]) [sx, sy] = [drag.sx, drag.sy];
    const c = info?.colour ?? [40, 110, 220];
    ctx.fillStyle = `rgb(${c[0]},${c[1]},${c[2]})`;
    ctx.beginPath();
    ctx.arc(sx, sy, Math.max(rad, 3), 0, 2 * Math.PI);
    ctx.fill();
    ctx.strokeStyle = r[6] ? '#f00' : r[0] === pa.selected ? '#ff0' : '#000';
    ctx.lineWidth = r[0] === pa.selected || r[6] ? 3 : 1;
    ctx.stroke();
    ctx.strokeStyle = '#fff';
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(sx, sy);
    ctx.lineTo(sx + Math.cos(r[3]) * Math.max(rad, 6), sy - Math.sin(r[3]) * Math.max(rad, 6));
    ctx.stroke();
  }
  if ($('showlabels').checked) drawLabels();
  drawBall();
  if (drag && drag.kind !== 'robot' && drag.kind !== 'pan') {
    ctx.strokeStyle = '#a50';
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    if (drag.kind === 'circle') ctx.arc(drag.x0, drag.y0, Math.hypot(drag.sx - drag.x0, drag.sy - drag.y0), 0, 2 * Math.PI);
    else ctx.rect(drag.x0, drag.y0, drag.sx - drag.x0, drag.sy - drag.y0);
    ctx.stroke();
    ctx.setLineDash([]);
  }
  drawScaleBar();
  pa.twistPlot = drawTwist($('twistplot'), pa.twist, theme);
  pa.scanPlot = drawScan($('scanplot'), robotState(pa.selected) ? pa.scans.get(pa.selected) : null, theme);
  requestAnimationFrame(draw);
}
requestAnimationFrame(draw);

// Grid lines every 1, 2 or 5 x 10^k m, at least 40 px apart (pa.gridStep).
const STEPS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500];
function niceStep(px) { return STEPS.find((m) => m * view.scale >= px) ?? 1000; }
function drawGrid() {
  const step = niceStep(40);
  pa.gridStep = step;
  const [x0, y1] = toWorld(0, 0), [x1, y0] = toWorld(canvas.width, canvas.height);
  ctx.strokeStyle = theme.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let i = Math.ceil(x0 / step); i * step <= x1; i++) {
    const sx = Math.round(toScreen(i * step, 0)[0]) + 0.5;
    ctx.moveTo(sx, 0);
    ctx.lineTo(sx, canvas.height);
  }
  for (let j = Math.ceil(y0 / step); j * step <= y1; j++) {
    const sy = Math.round(toScreen(0, j * step)[1]) + 0.5;
    ctx.moveTo(0, sy);
    ctx.lineTo(canvas.width, sy);
  }
  ctx.stroke();
}

// The world frame at the origin: x red, y green (as RViz draws a frame).
const AXIS_X = 'rgb(225,29,72)', AXIS_Y = 'rgb(22,163,74)';
function drawAxes() {
  const len = Math.max(0.5, niceStep(50)), [ox, oy] = toScreen(0, 0);
  pa.axisLen = len;
  const w = 3;
  for (const [dx, dy, col] of [[1, 0, AXIS_X], [0, 1, AXIS_Y]]) {
    const [ex, ey] = toScreen(dx * len, dy * len);
    ctx.strokeStyle = ctx.fillStyle = col;
    ctx.lineWidth = w;
    ctx.beginPath();
    ctx.moveTo(ox, oy);
    ctx.lineTo(ex - dx * 8, ey + dy * 8);
    ctx.stroke();
    ctx.beginPath(); // the arrow head
    ctx.moveTo(ex, ey);
    ctx.lineTo(ex - dx * 10 - dy * 5, ey + dy * 10 - dx * 5);
    ctx.lineTo(ex - dx * 10 + dy * 5, ey + dy * 10 + dx * 5);
    ctx.fill();
    ctx.font = '600 12px system-ui, sans-serif';
    ctx.fillText(dx ? 'x' : 'y', ex + dx * 4 + 4, ey - dy * 4 - 4);
  }
}

// Each robot's name on a light plate above-right of it (pa.labels: where).
function drawLabels() {
  pa.labels = [];
  ctx.font = '600 12px system-ui, sans-serif';
  for (const r of pa.state?.robots ?? []) {
    const info = robotInfo(r[0]);
    const text = info?.name ?? `#${r[0]}`;
    const rad = Math.max((info?.radius ?? 0.18) * view.scale, 6);
    const [sx, sy] = toScreen(r[1], r[2]);
    const x = sx + rad * 0.7 + 4, y = sy - rad * 0.7 - 18, w = ctx.measureText(text).width + 8;
    ctx.fillStyle = theme.plate;
    ctx.strokeStyle = 'rgba(0,0,0,0.35)';
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.roundRect(x, y, w, 16, 4);
    ctx.fill();
    ctx.stroke();
    ctx.fillStyle = theme['plate-fg'];
    ctx.fillText(text, x + 4, y + 12);
    pa.labels.push({ robot: r[0], text, x, y, w, h: 16 });
  }
}

// A scale bar bottom right: a round length of about 100 px (pa.scaleBar).
function drawScaleBar() {
  const m = niceStep(80), px = m * view.scale;
  const x1 = canvas.width - 16, x0 = x1 - px, y = canvas.height - 18;
  ctx.fillStyle = theme.plate;
  ctx.beginPath();
  ctx.roundRect(x0 - 8, y - 20, px + 16, 30, 5);
  ctx.fill();
  ctx.fillStyle = theme['plate-fg'];
  ctx.fillRect(x0, y - 2, px, 5);
  ctx.fillRect(x0, y - 7, 2, 12);
  ctx.fillRect(x1 - 2, y - 7, 2, 12);
  ctx.font = '600 12px system-ui, sans-serif';
  const text = m >= 1 ? `${m} m` : `${Math.round(m * 100)} cm`;
  ctx.fillText(text, x0 + px / 2 - ctx.measureText(text).width / 2, y - 7);
  pa.scaleBar = { metres: m, px, x0, x1, y, text };
}

// The SSL field of the state's division, by the rules' geometry (as pa-sim's
// sim_ssl_field.c): [m] length, width, goal width, defence depth and width.
const SSL_FIELDS = {
  A: { length: 12, width: 9, goalWidth: 1.8, defenseDepth: 1.8, defenseWidth: 3.6 },
  B: { length: 9, width: 6, goalWidth: 1.0, defenseDepth: 1.0, defenseWidth: 2.0 },
};
const SSL_COMMON = { boundary: 0.3, goalDepth: 0.18, centerRadius: 0.5, lineWidth: 0.01 };
const FIELD_GREEN = [30, 120, 50];
pa.sslFields = SSL_FIELDS;

// Green carpet out to the boundary, white markings (touch and goal lines,
// halfway line, centre circle and mark, defence areas), goals in black.
function drawField() {
  const f = SSL_FIELDS[pa.state?.ssl];
  if (!f) return;
  const g = { ...f, ...SSL_COMMON };
  const hx = g.length / 2, hy = g.width / 2, b = g.boundary;
  const rect = (x0, y0, x1, y1) => {
    const [ax, ay] = toScreen(x0, y1), [bx, by] = toScreen(x1, y0);
    ctx.rect(ax, ay, bx - ax, by - ay);
  };
  ctx.fillStyle = `rgb(${FIELD_GREEN})`;
  ctx.beginPath();
  rect(-hx - b, -hy - b, hx + b, hy + b);
  ctx.fill();
  ctx.strokeStyle = '#fff';
  ctx.lineWidth = Math.max(g.lineWidth * view.scale, 3);
  ctx.beginPath();
  rect(-hx, -hy, hx, hy);
  const [mx0, my0] = toScreen(0, -hy), [mx1, my1] = toScreen(0, hy);
  ctx.moveTo(mx0, my0);
  ctx.lineTo(mx1, my1);
  rect(-hx, -g.defenseWidth / 2, -hx + g.defenseDepth, g.defenseWidth / 2);
  rect(hx - g.defenseDepth, -g.defenseWidth / 2, hx, g.defenseWidth / 2);
  ctx.stroke();
  const [cx, cy] = toScreen(0, 0);
  ctx.beginPath();
  ctx.arc(cx, cy, g.centerRadius * view.scale, 0, 2 * Math.PI);
  ctx.stroke();
  ctx.fillStyle = '#fff';
  ctx.beginPath();
  ctx.arc(cx, cy, Math.max(ctx.lineWidth, 2), 0, 2 * Math.PI);
  ctx.fill();
  // the goals: open towards the field, walls drawn thick and dark
  ctx.strokeStyle = '#111';
  ctx.lineWidth = Math.max(0.02 * view.scale, 3);
  for (const s of [-1, 1]) {
    const gy = g.goalWidth / 2, x0 = s * hx, x1 = s * (hx + g.goalDepth);
    const p = [toScreen(x0, -gy), toScreen(x1, -gy), toScreen(x1, gy), toScreen(x0, gy)];
    ctx.beginPath();
    p.forEach(([px, py], i) => (i ? ctx.lineTo(px, py) : ctx.moveTo(px, py)));
    ctx.stroke();
  }
}

// The SSL ball: orange, at least 4 px; chipped, a shadow on the ground
// where it is and the ball drawn up by its height, labelled.
function drawBall() {
  const b = pa.state?.ball;
  if (!b) return;
  const r = Math.max((pa.state.ball_radius ?? 0.0213) * view.scale, 4);
  const [sx, sy] = toScreen(b[0], b[1]);
  const up = b[2] > 0.005 ? b[2] : 0;
  if (up) {
    ctx.fillStyle = 'rgba(0,0,0,0.35)';
    ctx.beginPath();
    ctx.arc(sx, sy, r, 0, 2 * Math.PI);
    ctx.fill();
  }
  const by = sy - up * view.scale;
  ctx.fillStyle = BALL_FILL;
  ctx.beginPath();
  ctx.arc(sx, by, r, 0, 2 * Math.PI);
  ctx.fill();
  if (up) {
    ctx.fillStyle = '#000';
    ctx.font = '11px sans-serif';
    ctx.fillText(`z ${fmt(b[2], 2)} m`, sx + r + 2, by);
  }
}

const yawOf = (q) => Math.atan2(2 * (q[0] * q[3] + q[1] * q[2]), 1 - 2 * (q[2] * q[2] + q[3] * q[3]));
const rgbaCss = (c) => `rgba(${Math.round(c[0] * 255)},${Math.round(c[1] * 255)},${Math.round(c[2] * 255)},${c[3]})`;
const packedCss = (u) => `rgba(${u >>> 24},${(u >>> 16) & 255},${(u >>> 8) & 255},${(u & 255) / 255})`;

// RaisimServer's visual objects seen from above, in their colours.
function drawVisuals() {
  for (const v of pa.visuals) {
    if (!v.visible) continue;
    const col = rgbaCss(v.rgba);
    ctx.fillStyle = col;
    ctx.strokeStyle = col;
    const [sx, sy] = toScreen(v.pos[0], v.pos[1]);
    const yaw = yawOf(v.quat);
    ctx.save();
    if (v.type === 'sphere' || v.type === 'cylinder' || v.type === 'capsule') {
      ctx.beginPath();
      ctx.arc(sx, sy, Math.max(v.size[0] * view.scale, 2), 0, 2 * Math.PI);
      ctx.fill();
    } else if (v.type === 'box') {
      ctx.translate(sx, sy);
      ctx.rotate(-yaw);
      ctx.fillRect(-v.size[0] / 2 * view.scale, -v.size[1] / 2 * view.scale, v.size[0] * view.scale, v.size[1] * view.scale);
    } else if (v.type === 'arrow') {
      const len = v.size[0] * view.scale, head = Math.max(v.size[1] * view.scale, 4);
      ctx.translate(sx, sy);
      ctx.rotate(-yaw);
      ctx.lineWidth = Math.max(head / 3, 2);
      ctx.beginPath();
      ctx.moveTo(0, 0);
      ctx.lineTo(len - head, 0);
      ctx.stroke();
      ctx.beginPath();
      ctx.moveTo(len, 0);
      ctx.lineTo(len - head, -head / 2);
      ctx.lineTo(len - head, head / 2);
      ctx.fill();
    } else if (v.type === 'polyline' && v.points?.length) {
      ctx.lineWidth = Math.max(v.size[0], 1);
      ctx.beginPath();
      v.points.forEach((p, i) => { const [px, py] = toScreen(p[0], p[1]); i ? ctx.lineTo(px, py) : ctx.moveTo(px, py); });
      ctx.stroke();
    } else if (v.type === 'point_cloud' && v.points) {
      const d = Math.max(v.size[0], 1);
      for (const p of v.points) {
        ctx.fillStyle = p[3] ? packedCss(p[3]) : col;
        const [px, py] = toScreen(p[0], p[1]);
        ctx.fillRect(px - d / 2, py - d / 2, d, d);
      }
    } else if (v.type === 'text') {
      ctx.font = `${Math.max(v.size[0] * view.scale, 10)}px sans-serif`;
      ctx.fillText(v.label.text, sx, sy);
    } else if (v.type === 'mesh' && v.points) {
      drawMesh(v, col);
    } else if (v.type === 'heightmap' && v.points && v.grid) {
      drawHeightmap(v, col);
    } else if (v.type === 'instanced' && v.points) {
      drawInstances(v);
    }
    ctx.restore();
  }
}

// Point p of a visual's frame (scaled by s) in the world: its quaternion
// [w, x, y, z], then its position.
function rotq(q, p) {
  const [w, x, y, z] = q;
  const tx = 2 * (y * p[2] - z * p[1]), ty = 2 * (z * p[0] - x * p[2]), tz = 2 * (x * p[1] - y * p[0]);
  return [p[0] + w * tx + (y * tz - z * ty), p[1] + w * ty + (z * tx - x * tz), p[2] + w * tz + (x * ty - y * tx)];
}
const toWorld3 = (v, p, s = [1, 1, 1]) => {
  const r = rotq(v.quat, [p[0] * s[0], p[1] * s[1], p[2] * s[2]]);
  return [r[0] + v.pos[0], r[1] + v.pos[1], r[2] + v.pos[2]];
};
// A fill colour shaded as from above: faces turned away from up are darker.
const shadeCss = (u, col, k) => {
  const m = col.match(/[\d.]+/g).map(Number);
  const c = u ? [u >>> 24, (u >>> 16) & 255, (u >>> 8) & 255] : m.slice(0, 3);
  return `rgba(${Math.round(c[0] * k)},${Math.round(c[1] * k)},${Math.round(c[2] * k)},${m[3]})`;
};

// A mesh's triangles seen from above, lowest first, shaded by how much
// each faces up (as the 3-D views light it).
function drawMesh(v, col) {
  // world triangles made once per visual object (a change on the server
  // comes as a new object), not every frame
  if (!v.tris) v.tris = meshTris(v);
  for (const [a, b, c, , k, u] of v.tris) {
    ctx.fillStyle = shadeCss(u, col, k);
    ctx.beginPath();
    for (const p of [a, b, c]) { const [px, py] = toScreen(p[0], p[1]); p === a ? ctx.moveTo(px, py) : ctx.lineTo(px, py); }
    ctx.closePath();
    ctx.fill();
  }
}

function meshTris(v) {
  const s = v.size, pts = v.points, tris = [];
  for (let k = 0; k + 2 < pts.length; k += 3) {
    const a = toWorld3(v, pts[k], s), b = toWorld3(v, pts[k + 1], s), c = toWorld3(v, pts[k + 2], s);
    const nx = (b[1] - a[1]) * (c[2] - a[2]) - (b[2] - a[2]) * (c[1] - a[1]);
    const ny = (b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2]);
    const nz = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
    const up = Math.abs(nz) / (Math.hypot(nx, ny, nz) || 1);
    tris.push([a, b, c, (a[2] + b[2] + c[2]) / 3, 0.55 + 0.45 * up, pts[k][3]]);
  }
  return tris.sort((p, q) => p[3] - q[3]);
}

// A height map's cells from above, each in its sample's colour.
function drawHeightmap(v, col) {
  const [nx, ny] = v.grid, pts = v.points;
  if (pts.length !== nx * ny) return;
  for (let j = 0; j + 1 < ny; j++) {
    for (let i = 0; i + 1 < nx; i++) {
      const q = [pts[j * nx + i], pts[j * nx + i + 1], pts[(j + 1) * nx + i + 1], pts[(j + 1) * nx + i]].map((p) => toWorld3(v, p));
      ctx.fillStyle = shadeCss(pts[j * nx + i][3], col, 1);
      ctx.strokeStyle = ctx.fillStyle;
      ctx.beginPath();
      q.forEach((p, k) => { const [px, py] = toScreen(p[0], p[1]); k ? ctx.lineTo(px, py) : ctx.moveTo(px, py); });
      ctx.closePath();
      ctx.fill();
      ctx.stroke(); // no hairline gaps between cells
    }
  }
}

// One shape per instance at its pose: a disc (sphere, cylinder, capsule),
// a rectangle (box) or a line (arrow), in its colour.
function drawInstances(v) {
  const st = v.stride || 1, pts = v.points, base = rgbaCss(v.rgba);
  for (let k = 0; k + st <= pts.length; k += st) {
    const p = toWorld3(v, pts[k]);
    let q = [1, 0, 0, 0], sc = [1, 1, 1];
    if (st >= 2) { const [x, y, z] = pts[k + 1]; q = [Math.sqrt(Math.max(0, 1 - x * x - y * y - z * z)), x, y, z]; }
    if (st === 3) sc = pts[k + 2];
    const [w, x, y, z] = v.quat, [b, c, d, e] = q; // the visual's turn, then the instance's
    const qq = [w * b - x * c - y * d - z * e, w * c + x * b + y * e - z * d, w * d - x * e + y * b + z * c, w * e + x * d - y * c + z * b];
    const [sx, sy] = toScreen(p[0], p[1]);
    const yaw = yawOf(qq);
    ctx.save();
    ctx.fillStyle = ctx.strokeStyle = pts[k][3] ? packedCss(pts[k][3]) : base;
    ctx.translate(sx, sy);
    ctx.rotate(-yaw);
    const sz = v.size;
    if (v.shape === 'box') {
      const a = sz[0] * sc[0] * view.scale, bb = sz[1] * sc[1] * view.scale;
      ctx.fillRect(-a / 2, -bb / 2, a, bb);
    } else if (v.shape === 'arrow') {
      ctx.lineWidth = Math.max(sz[1] * sc[1] * view.scale / 3, 2);
      ctx.beginPath();
      ctx.moveTo(0, 0);
      ctx.lineTo(sz[0] * sc[0] * view.scale, 0);
      ctx.stroke();
    } else {
      ctx.beginPath();
      ctx.arc(0, 0, Math.max(sz[0] * sc[0] * view.scale, 2), 0, 2 * Math.PI);
      ctx.fill();
    }
    ctx.restore();
  }
}

// ---- mouse: select, teleport, draw obstacles, pan, zoom --------------------

function robotAt(sx, sy) {
  for (const r of pa.state?.robots ?? []) {
    const [x, y] = toScreen(r[1], r[2]);
    const rad = Math.max((robotInfo(r[0])?.radius ?? 0.18) * view.scale, 8);
    if (Math.hypot(x - sx, y - sy) <= rad) return r;
  }
  return null;
}

let obstacleN = 0;
canvas.addEventListener('contextmenu', (e) => e.preventDefault());
canvas.addEventListener('mousedown', (e) => {
  const sx = e.offsetX, sy = e.offsetY;
  if (e.button === 2 || e.button === 1) { drag = { kind: 'pan', sx, sy }; return; }
  if (tool === 'move') {
    const r = robotAt(sx, sy);
    if (r) {
      pa.selected = r[0];
      $('robotsel').value = r[0];
      drag = { kind: 'robot', robot: r[0], theta: r[3], sx, sy, moved: false };
    }
  } else if (tool === 'box' || tool === 'circle') {
    drag = { kind: tool, x0: sx, y0: sy, sx, sy };
  } else if (tool === 'remove') {
    const [wx, wy] = toWorld(sx, sy);
    const o = pa.world.obstacles.find((ob) => (ob.shape === 'circle'
      ? Math.hypot(ob.x - wx, ob.y - wy) <= ob.radius
      : Math.abs(wx - ob.x) <= ob.size[0] / 2 + 0.05 && Math.abs(wy - ob.y) <= ob.size[1] / 2 + 0.05));
    if (o) act('remove_obstacle', { name: o.name });
  }
});
canvas.addEventListener('mousemove', (e) => {
  const [wx, wy] = toWorld(e.offsetX, e.offsetY);
  $('hud').textContent = `x ${fmt(wx)} m, y ${fmt(wy)} m, zoom ${fmt(view.scale, 1)} px/m`;
  if (!drag) return;
  if (drag.kind === 'pan') {
    setFollow(false);
    view.cx -= (e.offsetX - drag.sx) / view.scale;
    view.cy += (e.offsetY - drag.sy) / view.scale;
  }
  drag.sx = e.offsetX;
  drag.sy = e.offsetY;
  drag.moved = true;
});
window.addEventListener('mouseup', () => {
  const d = drag;
  drag = null;
  if (!d) return;
  if (d.kind === 'robot' && d.moved) {
    const [x, y] = toWorld(d.sx, d.sy);
    act('set_pose', { robot: d.robot, pose: [x, y, d.theta] });
  } else if (d.kind === 'box' || d.kind === 'circle') {
    const [x0, y0] = toWorld(d.x0, d.y0), [x1, y1] = toWorld(d.sx, d.sy);
    const name = `web${Date.now() % 100000}_${obstacleN++}`;
    if (d.kind === 'circle') {
      const radius = Math.hypot(x1 - x0, y1 - y0);
      if (radius > 0.02) act('spawn_obstacle', { name, shape: 'circle', pose: [x0, y0, 0], radius });
    } else if (Math.abs(x1 - x0) > 0.02 && Math.abs(y1 - y0) > 0.02) {
      act('spawn_obstacle', { name, shape: 'box', pose: [(x0 + x1) / 2, (y0 + y1) / 2, 0], size: [Math.abs(x1 - x0), Math.abs(y1 - y0)] });
    }
  }
});
canvas.addEventListener('mouseleave', () => { $('hud').textContent = ''; });
canvas.addEventListener('wheel', (e) => {
  e.preventDefault();
  const [wx, wy] = toWorld(e.offsetX, e.offsetY);
  view.scale *= e.deltaY < 0 ? 1.15 : 1 / 1.15;
  const [nx, ny] = toWorld(e.offsetX, e.offsetY);
  view.cx += wx - nx;
  view.cy += wy - ny;
}, { passive: false });
