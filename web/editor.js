// editor.js - the map editor: an occupancy grid drawn with pencil, eraser,
// line, rectangles, circle, flood fill and an unknown brush (undo/redo,
// zoom/pan, grid and ruler); robots and obstacles placed on it. Exports what
// ROS map_server and playarea load (map.yaml + grey PNG, trinary, origin at
// the centre by default, image row 0 north) and a world YAML; "Run it"
// uploads them and sends set_map / set_scenario over /ws.
import { Session, cellGrey, parseMapYaml, greyToCells, parsePgm, decodeImage,
  encodeGreyPng, download, upload, fmt, setupTheme, theme } from './common.js';

const $ = (id) => document.getElementById(id);
const canvas = $('view');
const ctx = canvas.getContext('2d');

const OCC = 100, FREE = 0, UNKNOWN = -1;
const ed = {
  W: 0, H: 0, res: 0.05, origin: [0, 0, 0], cells: null,
  robots: [], obstacles: [], undo: [], redo: [],
};
window.editor = ed; // the browser tests read the grid
let tool = 'pencil';
let view = { ox: 20, oy: 20, scale: 4 }; // screen px of cell (0, 0)'s corner, px per cell
let gridCanvas = null, dirty = true;
let stroke = null;

const session = new Session({
  onOpen: () => { $('conn').textContent = 'connected'; $('conn').className = 'up'; },
  onClose: () => { $('conn').textContent = 'disconnected: reconnecting...'; $('conn').className = 'down'; },
  onMap: (m) => { ed.serverMap = m; },
  // the running world: robots and obstacles ("world"), robot poses ("state")
  onMessage: (m) => {
    if (m.type === 'world') ed.serverWorld = m;
    else if (m.type === 'state') ed.serverState = m;
  },
});

setupTheme($('theme'));

function say(ok, err) {
  $('ok').textContent = ok || '';
  $('error').textContent = err || '';
}

// ---- the grid ---------------------------------------------------------------

function newMap(W, H, res, origin, cells) {
  ed.W = W;
  ed.H = H;
  ed.res = res;
  ed.origin = origin ?? [-(W * res) / 2, -(H * res) / 2, 0];
  ed.cells = cells ?? new Int8Array(W * H).fill(FREE);
  ed.undo = [];
  ed.redo = [];
  $('wm').value = +(W * res).toFixed(4);
  $('hm').value = +(H * res).toFixed(4);
  $('res').value = res;
  $('size').textContent = `${W} x ${H} cells, origin [${fmt(ed.origin[0], 3)}, ${fmt(ed.origin[1], 3)}, 0]`;
  gridCanvas = document.createElement('canvas');
  gridCanvas.width = W;
  gridCanvas.height = H;
  dirty = true;
  fitView();
}
ed.newMap = newMap;

function fitView() {
  const cw = canvas.clientWidth || 800, ch = canvas.clientHeight || 600;
  view.scale = Math.max(0.05, Math.min((cw - 40) / ed.W, (ch - 40) / ed.H));
  view.ox = (cw - ed.W * view.scale) / 2;
  view.oy = (ch - ed.H * view.scale) / 2;
}

function snapshot() {
  ed.undo.push(ed.cells.slice());
  if (ed.undo.length > 100) ed.undo.shift();
  ed.redo = [];
}
ed.doUndo = () => { if (ed.undo.length) { ed.redo.push(ed.cells); ed.cells = ed.undo.pop(); dirty = true; } };
ed.doRedo = () => { if (ed.redo.length) { ed.undo.push(ed.cells); ed.cells = ed.redo.pop(); dirty = true; } };

function set(c, r, v) {
  if (c >= 0 && r >= 0 && c < ed.W && r < ed.H) { ed.cells[r * ed.W + c] = v; dirty = true; }
}
function brush(c, r, v) {
  const b = Math.max(1, Number($('brush').value) | 0), h = Math.floor((b - 1) / 2);
  for (let dr = -h; dr < b - h; dr++) for (let dc = -h; dc < b - h; dc++) set(c + dc, r + dr, v);
}
function line(c0, r0, c1, r1, v, plot = brush) {
  const dc = Math.abs(c1 - c0), dr = -Math.abs(r1 - r0);
  const sc = c0 < c1 ? 1 : -1, sr = r0 < r1 ? 1 : -1;
  let e = dc + dr;
  for (;;) {
    plot(c0, r0, v);
    if (c0 === c1 && r0 === r1) break;
    const e2 = 2 * e;
    if (e2 >= dr) { e += dr; c0 += sc; }
    if (e2 <= dc) { e += dc; r0 += sr; }
  }
}
function rect(c0, r0, c1, r1, v, filled) {
  const [a, b] = [Math.min(c0, c1), Math.max(c0, c1)], [p, q] = [Math.min(r0, r1), Math.max(r0, r1)];
  if (filled) { for (let r = p; r <= q; r++) for (let c = a; c <= b; c++) set(c, r, v); return; }
  line(a, p, b, p, v); line(b, p, b, q, v); line(b, q, a, q, v); line(a, q, a, p, v);
}
function circle(c0, r0, c1, r1, v) {
  const R = Math.round(Math.hypot(c1 - c0, r1 - r0));
  const n = Math.max(16, Math.ceil(2 * Math.PI * R * 2));
  let prev = null;
  for (let i = 0; i <= n; i++) {
    const a = (2 * Math.PI * i) / n;
    const p = [Math.round(c0 + R * Math.cos(a)), Math.round(r0 + R * Math.sin(a))];
    if (prev) line(prev[0], prev[1], p[0], p[1], v);
    prev = p;
  }
}
function flood(c, r, v) {
  if (c < 0 || r < 0 || c >= ed.W || r >= ed.H) return;
  const from = ed.cells[r * ed.W + c];
  if (from === v) return;
  const stack = [r * ed.W + c];
  while (stack.length) {
    const i = stack.pop();
    if (ed.cells[i] !== from) continue;
    ed.cells[i] = v;
    const x = i % ed.W, y = (i / ed.W) | 0;
    if (x > 0) stack.push(i - 1);
    if (x < ed.W - 1) stack.push(i + 1);
    if (y > 0) stack.push(i - ed.W);
    if (y < ed.H - 1) stack.push(i + ed.W);
  }
  dirty = true;
}
ed.ops = { line, rect, circle, flood, brush, snapshot };

// ---- coordinates ---------------------------------------------------------------

const toCell = (sx, sy) => [Math.floor((sx - view.ox) / view.scale), Math.floor((sy - view.oy) / view.scale)];
// world metres of a screen point (image row 0 is the north edge)
const toWorld = (sx, sy) => [ed.origin[0] + ((sx - view.ox) / view.scale) * ed.res,
  ed.origin[1] + (ed.H - (sy - view.oy) / view.scale) * ed.res];
const worldToScreen = (x, y) => [view.ox + ((x - ed.origin[0]) / ed.res) * view.scale,
  view.oy + (ed.H - (y - ed.origin[1]) / ed.res) * view.scale];
ed.cellToScreen = (c, r) => [view.ox + (c + 0.5) * view.scale, view.oy + (r + 0.5) * view.scale];
ed.worldToScreen = worldToScreen;

// ---- drawing the page ---------------------------------------------------------

function draw() {
  if (canvas.width !== canvas.clientWidth || canvas.height !== canvas.clientHeight) {
    canvas.width = canvas.clientWidth;
    canvas.height = canvas.clientHeight;
  }
  if (dirty && gridCanvas) {
    const g = gridCanvas.getContext('2d');
    const img = g.createImageData(ed.W, ed.H);
    for (let i = 0; i < ed.cells.length; i++) {
      const v = ed.cells[i];
      const o = 4 * i;
      if (v < 0) { img.data[o] = 170; img.data[o + 1] = 190; img.data[o + 2] = 205; } else {
        img.data[o] = img.data[o + 1] = img.data[o + 2] = cellGrey(v);
      }
      img.data[o + 3] = 255;
    }
    g.putImageData(img, 0, 0);
    dirty = false;
  }
  ctx.fillStyle = theme.canvas;
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  if (!gridCanvas) { requestAnimationFrame(draw); return; }
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(gridCanvas, view.ox, view.oy, ed.W * view.scale, ed.H * view.scale);
  if ($('grid').checked) drawGrid();
  for (const o of ed.obstacles) {
    ctx.fillStyle = 'rgba(170,110,50,0.8)';
    const [sx, sy] = worldToScreen(o.x, o.y);
    const k = view.scale / ed.res;
    if (o.shape === 'circle') { ctx.beginPath(); ctx.arc(sx, sy, o.radius * k, 0, 2 * Math.PI); ctx.fill(); }
    else {
      ctx.save();
      ctx.translate(sx, sy);
      ctx.rotate(-(o.theta ?? 0));
      ctx.fillRect(-(o.size[0] * k) / 2, -(o.size[1] * k) / 2, o.size[0] * k, o.size[1] * k);
      ctx.restore();
    }
  }
  for (const r of ed.robots) {
    const [sx, sy] = worldToScreen(r.pose[0], r.pose[1]);
    const rad = Math.max(4, (r.radius / ed.res) * view.scale);
    ctx.fillStyle = 'rgb(40,110,220)';
    ctx.beginPath(); ctx.arc(sx, sy, rad, 0, 2 * Math.PI); ctx.fill();
    ctx.strokeStyle = '#fff'; ctx.lineWidth = 2; ctx.beginPath(); ctx.moveTo(sx, sy);
    ctx.lineTo(sx + rad * Math.cos(r.pose[2]), sy - rad * Math.sin(r.pose[2])); ctx.stroke();
  }
  if (stroke?.preview) {
    ctx.strokeStyle = '#d40';
    ctx.setLineDash([4, 3]);
    const [a, b] = [stroke.s0, stroke.s1];
    ctx.beginPath();
    if (['line'].includes(tool)) { ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); }
    else if (['circle', 'ocircle'].includes(tool)) ctx.arc(a[0], a[1], Math.hypot(b[0] - a[0], b[1] - a[1]), 0, 2 * Math.PI);
    else if (tool === 'robot') { ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); }
    else ctx.rect(a[0], a[1], b[0] - a[0], b[1] - a[1]);
    ctx.stroke();
    ctx.setLineDash([]);
  }
  requestAnimationFrame(draw);
}

// grid lines every metre (or a power of ten that keeps them apart) and a
// scale bar: the ruler
function drawGrid() {
  const pxPerM = view.scale / ed.res;
  let step = 1;
  while (step * pxPerM < 25) step *= 10;
  while (step * pxPerM > 250) step /= 10;
  ctx.strokeStyle = 'rgba(0,90,200,0.25)';
  ctx.lineWidth = 1;
  ctx.beginPath();
  const x0 = Math.ceil(ed.origin[0] / step) * step, x1 = ed.origin[0] + ed.W * ed.res;
  for (let x = x0; x <= x1 + 1e-9; x += step) { const [sx] = worldToScreen(x, 0); ctx.moveTo(sx, view.oy); ctx.lineTo(sx, view.oy + ed.H * view.scale); }
  const y0 = Math.ceil(ed.origin[1] / step) * step, y1 = ed.origin[1] + ed.H * ed.res;
  for (let y = y0; y <= y1 + 1e-9; y += step) { const [, sy] = worldToScreen(0, y); ctx.moveTo(view.ox, sy); ctx.lineTo(view.ox + ed.W * view.scale, sy); }
  ctx.stroke();
  const bar = step * pxPerM;
  ctx.fillStyle = theme.plate;
  ctx.beginPath();
  ctx.roundRect(8, canvas.height - 66, bar + 64, 24, 5);
  ctx.fill();
  ctx.fillStyle = theme['plate-fg'];
  ctx.fillRect(14, canvas.height - 56, bar, 4);
  ctx.font = '600 12px system-ui, sans-serif';
  ctx.fillText(`${+step.toFixed(6)} m`, 20 + bar, canvas.height - 49);
}

// ---- tools ------------------------------------------------------------------------

function paintValue() { return tool === 'eraser' ? FREE : tool === 'unknown' ? UNKNOWN : OCC; }
for (const b of document.querySelectorAll('#tools button, #wtools button')) {
  b.onclick = () => {
    tool = b.dataset.tool;
    for (const o of document.querySelectorAll('#tools button, #wtools button')) o.classList.toggle('on', o === b);
  };
}
canvas.addEventListener('contextmenu', (e) => e.preventDefault());
canvas.addEventListener('mousedown', (e) => {
  if (!ed.cells) return;
  const s = [e.offsetX, e.offsetY];
  if (e.button !== 0) { stroke = { pan: true, s0: s }; return; }
  const [c, r] = toCell(...s);
  stroke = { s0: s, s1: s, c0: c, r0: r, c, r };
  if (['pencil', 'eraser', 'unknown'].includes(tool)) { snapshot(); brush(c, r, paintValue()); }
  else if (tool === 'fill') { snapshot(); flood(c, r, OCC); stroke = null; }
  else stroke.preview = true;
});
canvas.addEventListener('mousemove', (e) => {
  const [wx, wy] = toWorld(e.offsetX, e.offsetY);
  const [c, r] = toCell(e.offsetX, e.offsetY);
  $('hud').textContent = `x ${fmt(wx, 3)} m, y ${fmt(wy, 3)} m, cell ${c}, ${r}`;
  if (!stroke) return;
  if (stroke.pan) {
    view.ox += e.offsetX - stroke.s0[0];
    view.oy += e.offsetY - stroke.s0[1];
    stroke.s0 = [e.offsetX, e.offsetY];
    return;
  }
  stroke.s1 = [e.offsetX, e.offsetY];
  if (['pencil', 'eraser', 'unknown'].includes(tool)) {
    line(stroke.c, stroke.r, c, r, paintValue());
    stroke.c = c;
    stroke.r = r;
  }
});
window.addEventListener('mouseup', () => {
  const s = stroke;
  stroke = null;
  if (!s || s.pan || !s.preview) return;
  const [c1, r1] = toCell(...s.s1);
  const [x0, y0] = toWorld(...s.s0), [x1, y1] = toWorld(...s.s1);
  if (tool === 'line') { snapshot(); line(s.c0, s.r0, c1, r1, OCC); }
  else if (tool === 'rect' || tool === 'frect') { snapshot(); rect(s.c0, s.r0, c1, r1, OCC, tool === 'frect'); }
  else if (tool === 'circle') { snapshot(); circle(s.c0, s.r0, c1, r1, OCC); }
  else if (tool === 'robot') {
    const th = Math.hypot(x1 - x0, y1 - y0) > 0.05 ? Math.atan2(y1 - y0, x1 - x0) : 0;
    ed.robots.push({ name: `robot${ed.robots.length}`, pose: [x0, y0, th], drive: $('drive').value, radius: Number($('radius').value) });
  } else if (tool === 'obox' && Math.abs(x1 - x0) > 0.01 && Math.abs(y1 - y0) > 0.01) {
    ed.obstacles.push({ name: `box${ed.obstacles.length}`, shape: 'box', x: (x0 + x1) / 2, y: (y0 + y1) / 2, size: [Math.abs(x1 - x0), Math.abs(y1 - y0)] });
  } else if (tool === 'ocircle' && Math.hypot(x1 - x0, y1 - y0) > 0.01) {
    ed.obstacles.push({ name: `round${ed.obstacles.length}`, shape: 'circle', x: x0, y: y0, radius: Math.hypot(x1 - x0, y1 - y0) });
  }
  listThings();
});
canvas.addEventListener('wheel', (e) => {
  e.preventDefault();
  const k = e.deltaY < 0 ? 1.2 : 1 / 1.2;
  view.ox = e.offsetX - (e.offsetX - view.ox) * k;
  view.oy = e.offsetY - (e.offsetY - view.oy) * k;
  view.scale *= k;
}, { passive: false });
window.addEventListener('keydown', (e) => {
  if (e.target.tagName === 'INPUT') return;
  if ((e.ctrlKey || e.metaKey) && e.key === 'z') { e.preventDefault(); e.shiftKey ? ed.doRedo() : ed.doUndo(); }
  if ((e.ctrlKey || e.metaKey) && e.key === 'y') { e.preventDefault(); ed.doRedo(); }
});
$('undo').onclick = ed.doUndo;
$('redo').onclick = ed.doRedo;

function listThings() {
  const ul = $('things');
  ul.innerHTML = '';
  const add = (text, arr, i) => {
    const li = document.createElement('li');
    li.textContent = text + ' ';
    const b = document.createElement('button');
    b.textContent = 'x';
    b.onclick = () => { arr.splice(i, 1); listThings(); };
    li.appendChild(b);
    ul.appendChild(li);
  };
  ed.robots.forEach((r, i) => add(`${r.name} (${r.drive}) at ${fmt(r.pose[0])}, ${fmt(r.pose[1])}`, ed.robots, i));
  ed.obstacles.forEach((o, i) => add(`${o.name} ${o.shape} at ${fmt(o.x)}, ${fmt(o.y)}`, ed.obstacles, i));
}

$('new').onclick = () => {
  const res = Number($('res').value), wm = Number($('wm').value), hm = Number($('hm').value);
  if (!(res > 0) || !(wm > 0) || !(hm > 0)) { say('', 'size and resolution must be positive'); return; }
  const W = Math.round(wm / res), H = Math.round(hm / res);
  if (W > 8192 || H > 8192) { say('', `${W} x ${H} cells: at most 8192 x 8192`); return; }
  newMap(W, H, res);
  ed.robots = [];
  ed.obstacles = [];
  listThings();
  say(`new ${W} x ${H} map`);
};

// ---- files --------------------------------------------------------------------------

function mapYaml(name) {
  return `image: ${name}.png\nresolution: ${ed.res}\norigin: [${ed.origin[0]}, ${ed.origin[1]}, ${ed.origin[2] ?? 0}]\n` +
    'negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\nmode: trinary\n';
}
function worldYaml(name) {
  let s = `# made in the playarea map editor\nmap: ${name}.yaml\n`;
  if (ed.robots.length) {
    s += 'robots:\n';
    for (const r of ed.robots) {
      s += `  - {name: ${JSON.stringify(r.name)}, pose: [${r.pose.map((v) => +v.toFixed(4)).join(', ')}], drive: ${r.drive}, radius: ${r.radius}}\n`;
    }
  }
  if (ed.obstacles.length) {
    s += 'obstacles:\n';
    for (const o of ed.obstacles) {
      s += o.shape === 'circle'
        ? `  - {name: ${JSON.stringify(o.name)}, shape: circle, pose: [${+o.x.toFixed(4)}, ${+o.y.toFixed(4)}, 0], radius: ${+o.radius.toFixed(4)}}\n`
        : `  - {name: ${JSON.stringify(o.name)}, shape: box, pose: [${+o.x.toFixed(4)}, ${+o.y.toFixed(4)}, ${+(o.theta ?? 0).toFixed(5)}], size: [${+o.size[0].toFixed(4)}, ${+o.size[1].toFixed(4)}]}\n`;
    }
  }
  return s;
}
async function png() {
  const grey = new Uint8Array(ed.cells.length);
  for (let i = 0; i < grey.length; i++) grey[i] = cellGrey(ed.cells[i]);
  return encodeGreyPng(ed.W, ed.H, grey);
}
function baseName() {
  const n = $('name').value.trim();
  return /^[A-Za-z0-9_-]{1,60}$/.test(n) ? n : null;
}
ed.files = async () => {
  const name = baseName();
  return { name, yaml: mapYaml(name), png: await png(), world: worldYaml(name) };
};

$('export').onclick = async () => {
  const name = baseName();
  if (!name) { say('', 'name: letters, digits, _ and - only'); return; }
  download(`${name}.yaml`, mapYaml(name), 'text/yaml');
  download(`${name}.png`, await png(), 'image/png');
  say(`exported ${name}.yaml + ${name}.png`);
};
$('exportworld').onclick = () => {
  const name = baseName();
  if (!name) { say('', 'name: letters, digits, _ and - only'); return; }
  download(`${name}.world.yaml`, worldYaml(name), 'text/yaml');
  say(`exported ${name}.world.yaml (with ${name}.yaml + ${name}.png next to it)`);
};

$('open').onchange = async (e) => {
  try {
    const files = [...e.target.files];
    const yf = files.find((f) => /\.ya?ml$/.test(f.name));
    if (!yf) throw new Error('pick the map.yaml and its image together');
    const y = parseMapYaml(await yf.text());
    const imgName = String(y.image).split('/').pop();
    const img = files.find((f) => f.name === imgName);
    if (!img) throw new Error(`${yf.name} names image ${y.image}: pick it too`);
    const pix = /\.pgm$/i.test(img.name) ? parsePgm(new Uint8Array(await img.arrayBuffer())) : await decodeImage(img);
    newMap(pix.width, pix.height, Number(y.resolution), [y.origin[0], y.origin[1], y.origin[2] ?? 0], greyToCells(pix.grey, y));
    $('name').value = yf.name.replace(/\.ya?ml$/, '').replace(/[^A-Za-z0-9_-]/g, '_');
    say(`opened ${yf.name} (${pix.width} x ${pix.height})`);
  } catch (err) {
    say('', err.message);
  }
};

$('fromserver').onclick = () => {
  const m = ed.serverMap;
  if (!m) { say('', 'no map from the server yet'); return; }
  const cells = new Int8Array(m.width * m.height);
  for (let r = 0; r < m.height; r++) {
    // grid row 0 is south; the editor's row 0 is north
    cells.set(m.cells.subarray((m.height - 1 - r) * m.width, (m.height - r) * m.width), r * m.width);
  }
  for (let i = 0; i < cells.length; i++) cells[i] = cells[i] < 0 ? UNKNOWN : cells[i] >= m.occupied_min ? OCC : FREE;
  newMap(m.width, m.height, m.resolution, m.origin.slice(), cells);
  // the robots where they are now and the static obstacles (agents move on
  // their own: a world file has none)
  const w = ed.serverWorld, poses = new Map((ed.serverState?.robots ?? []).map((r) => [r[0], r]));
  ed.robots = (w?.robots ?? []).filter((r) => poses.has(r.id)).map((r) => {
    const p = poses.get(r.id);
    return { name: r.name, pose: [p[1], p[2], p[3]], drive: r.drive === 'omni' ? 'omni' : 'differential', radius: r.radius };
  });
  ed.obstacles = (w?.obstacles ?? []).filter((o) => !o.agent).map((o) => (o.shape === 'circle'
    ? { name: o.name, shape: 'circle', x: o.x, y: o.y, radius: o.radius }
    : { name: o.name, shape: 'box', x: o.x, y: o.y, theta: o.theta, size: o.size.slice() }));
  listThings();
  say(`loaded the running world (${m.width} x ${m.height} cells, ${ed.robots.length} robots, ${ed.obstacles.length} obstacles)`);
};

// Run it: the files go to the server's --upload_dir, then set_scenario (with
// robots or obstacles) or set_map, the same requests any client sends.
$('run').onclick = async () => {
  const name = baseName();
  if (!name) { say('', 'name: letters, digits, _ and - only'); return; }
  try {
    say('uploading...');
    await upload(`${name}.png`, await png());
    const yamlPath = await upload(`${name}.yaml`, mapYaml(name));
    let r;
    if (ed.robots.length || ed.obstacles.length) {
      const worldPath = await upload(`${name}.world.yaml`, worldYaml(name));
      r = await session.request('set_scenario', { world: worldPath });
    } else {
      r = await session.request('set_map', { map_yaml: yamlPath });
    }
    ed.lastRun = r;
    if (r.success) say(`${r.action}: ok, running ${name}`);
    else say('', `${r.action}: ${r.error.code}: ${r.error.message}`);
  } catch (err) {
    ed.lastRun = { success: false, error: { code: 'upload', message: err.message } };
    say('', err.message);
  }
};

newMap(200, 160, 0.05);
requestAnimationFrame(draw);
