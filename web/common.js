// common.js - what the viewer and the editor share: the /ws session (live
// frames in, JSON v2 requests out), map images (ROS map_server rules, as
// docs/world-format.md states them) and a grey PNG writer.

// VIS1: count, then per point cloud the visual's index, n and n x (f32 x,
// y, z, u32 0xRRGGBBAA); the points go to the visual of that index.
function parseClouds(dv, list) {
  const visuals = new Map(list.map((v) => [v.index, v]));
  const count = dv.getUint32(4, true);
  let o = 8;
  for (let c = 0; c < count; c++) {
    const idx = dv.getUint32(o, true), n = dv.getUint32(o + 4, true);
    o += 8;
    const pts = new Array(n);
    for (let k = 0; k < n; k++, o += 16)
      pts[k] = [dv.getFloat32(o, true), dv.getFloat32(o + 4, true), dv.getFloat32(o + 8, true), dv.getUint32(o + 12, true)];
    if (visuals.has(idx)) visuals.get(idx).points = pts;
  }
}

// A "visuals" message is the whole set ("full": true) or the visuals that
// changed and the names of those removed: merged by name, in their order.
function mergeVisuals(have, m) {
  if (m.full !== false) return m.visuals;
  const gone = new Set(m.removed || []);
  const changed = new Map(m.visuals.map((v) => [v.label.name, v]));
  const out = [];
  for (const v of have) {
    if (gone.has(v.label.name)) continue;
    const c = changed.get(v.label.name);
    changed.delete(v.label.name);
    out.push(c || v);
  }
  return out.concat([...changed.values()]);
}

// ---- the /ws session ----------------------------------------------------------

export class Session {
  constructor(handlers) {
    this.h = handlers;
    this.nextId = 1;
    this.waiting = new Map();
    this.pendingMap = null;
    this.visuals = [];
    this.open = false;
    this.connect();
  }

  connect() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    this.ws = new WebSocket(`${proto}//${location.host}/ws`);
    this.ws.binaryType = 'arraybuffer';
    this.ws.onopen = () => { this.open = true; this.h.onOpen?.(); };
    this.ws.onclose = () => {
      this.open = false;
      for (const [, w] of this.waiting) w.reject(new Error('connection closed'));
      this.waiting.clear();
      this.h.onClose?.();
      setTimeout(() => this.connect(), 1000);
    };
    this.ws.onmessage = (ev) => this.message(ev.data);
  }

  message(data) {
    if (typeof data !== 'string') {
      const dv = new DataView(data);
      const magic = String.fromCharCode(dv.getUint8(0), dv.getUint8(1), dv.getUint8(2), dv.getUint8(3));
      if (magic === 'SCN2') this.h.onScans?.(parseScans(dv));
      else if (magic === 'VIS1' && this.pendingVisuals) {
        const v = this.pendingVisuals;
        this.pendingVisuals = null;
        parseClouds(dv, v.visuals);
        this.visuals = mergeVisuals(this.visuals, v);
        this.h.onVisuals?.({ ...v, visuals: this.visuals });
      } else if (magic === 'MAP1' && this.pendingMap) {
        const m = this.pendingMap;
        this.pendingMap = null;
        m.cells = new Int8Array(data, 12, m.width * m.height);
        this.h.onMap?.(m);
      }
      return;
    }
    const m = JSON.parse(data);
    if (m.type === 'map') { this.pendingMap = m; return; }
    if (m.type === 'visuals') { this.pendingVisuals = m; return; }
    if (m.request_id !== undefined && this.waiting.has(m.request_id)) {
      const w = this.waiting.get(m.request_id);
      this.waiting.delete(m.request_id);
      w.resolve(m);
      return;
    }
    this.h.onMessage?.(m);
  }

  // One JSON v2 request; resolves with the reply (errors included: check
  // reply.success and reply.error.code).
  request(action, data = {}, type = 'command') {
    const id = `web-${this.nextId++}`;
    const msg = { type, protocol_version: 2, request_id: id, action, data };
    return new Promise((resolve, reject) => {
      if (!this.open) { reject(new Error('not connected')); return; }
      this.waiting.set(id, { resolve, reject });
      this.ws.send(JSON.stringify(msg));
    });
  }
}

function parseScans(dv) {
  const count = dv.getUint32(4, true);
  const scans = [];
  let o = 8;
  for (let i = 0; i < count; i++) {
    const robot = dv.getUint32(o, true), n = dv.getUint32(o + 4, true);
    const f = (k) => dv.getFloat32(o + 8 + 4 * k, true);
    const s = { robot, x: f(0), y: f(1), theta: f(2), angle_min: f(3), angle_increment: f(4), range_max: f(5) };
    s.ranges = new Float32Array(dv.buffer.slice(o + 32, o + 32 + 4 * n));
    scans.push(s);
    o += 32 + 4 * n;
  }
  return scans;
}

// ---- maps ---------------------------------------------------------------------

// Grey value of a cell as map_saver writes it (trinary): 0 occupied, 254
// free, 205 unknown.
export function cellGrey(v) { return v < 0 ? 205 : v >= 50 ? 0 : 254; }

// A tiny YAML reader for map.yaml: "key: value" lines, [a, b, c] lists.
export function parseMapYaml(text) {
  const out = {};
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    const m = /^([A-Za-z_]+)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    let v = m[2].trim();
    if (v.startsWith('[')) v = v.replace(/[[\]]/g, '').split(',').map(Number);
    else if (/^["'].*["']$/.test(v)) v = v.slice(1, -1);
    else if (v !== '' && !isNaN(Number(v))) v = Number(v);
    out[m[1]] = v;
  }
  for (const k of ['image', 'resolution', 'origin']) {
    if (out[k] === undefined) throw new Error(`map.yaml: missing ${k}`);
  }
  return out;
}

// Grey pixels (row 0 north) to cells (row 0 north) by map_server's rules.
export function greyToCells(grey, yaml) {
  const occT = yaml.occupied_thresh ?? 0.65, freeT = yaml.free_thresh ?? 0.196;
  const neg = yaml.negate === 1 || yaml.negate === true || yaml.negate === 'true';
  const cells = new Int8Array(grey.length);
  for (let i = 0; i < grey.length; i++) {
    const p = neg ? 255 - grey[i] : grey[i];
    const occ = (255 - p) / 255;
    cells[i] = occ > occT ? 100 : occ < freeT ? 0 : -1;
  }
  return cells;
}

// P5 PGM -> {width, height, grey}
export function parsePgm(bytes) {
  let o = 0;
  const tok = () => {
    for (;;) {
      while (o < bytes.length && /\s/.test(String.fromCharCode(bytes[o]))) o++;
      if (bytes[o] === 35) { while (o < bytes.length && bytes[o] !== 10) o++; continue; }
      break;
    }
    let s = '';
    while (o < bytes.length && !/\s/.test(String.fromCharCode(bytes[o]))) s += String.fromCharCode(bytes[o++]);
    return s;
  };
  if (tok() !== 'P5') throw new Error('PGM: only binary P5 is read');
  const width = Number(tok()), height = Number(tok()), max = Number(tok());
  o++;
  const grey = new Uint8Array(width * height);
  const wide = max > 255;
  for (let i = 0; i < grey.length; i++) {
    const v = wide ? (bytes[o + 2 * i] << 8) | bytes[o + 2 * i + 1] : bytes[o + i];
    grey[i] = Math.round((v * 255) / max);
  }
  return { width, height, grey };
}

// Any image the browser decodes -> grey (channels averaged, alpha as
// map_server counts it in trinary mode).
export async function decodeImage(blob) {
  const bmp = await createImageBitmap(blob, { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
  const c = document.createElement('canvas');
  c.width = bmp.width;
  c.height = bmp.height;
  const ctx = c.getContext('2d', { willReadFrequently: true });
  ctx.drawImage(bmp, 0, 0);
  const d = ctx.getImageData(0, 0, c.width, c.height).data;
  const grey = new Uint8Array(c.width * c.height);
  for (let i = 0; i < grey.length; i++) {
    const a = d[4 * i + 3];
    grey[i] = a === 255 ? Math.round((d[4 * i] + d[4 * i + 1] + d[4 * i + 2]) / 3)
      : Math.round((d[4 * i] + d[4 * i + 1] + d[4 * i + 2] + a) / 4);
  }
  return { width: c.width, height: c.height, grey };
}

// ---- PNG writer (8-bit grey, zlib by the browser's CompressionStream) ----------

const crcTable = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(bytes) {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = crcTable[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const out = new Uint8Array(12 + data.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  dv.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

export async function encodeGreyPng(width, height, grey) {
  const raw = new Uint8Array((width + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width + 1)] = 0; // filter: none
    raw.set(grey.subarray(y * width, (y + 1) * width), y * (width + 1) + 1);
  }
  const z = new Uint8Array(await new Response(
    new Blob([raw]).stream().pipeThrough(new CompressionStream('deflate'))).arrayBuffer());
  const ihdr = new Uint8Array(13);
  const dv = new DataView(ihdr.buffer);
  dv.setUint32(0, width);
  dv.setUint32(4, height);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // grey
  const parts = [new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr),
    chunk('IDAT', z), chunk('IEND', new Uint8Array(0))];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

export function download(name, data, type) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([data], { type }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

export async function upload(name, data) {
  const r = await fetch(`/api/upload?name=${encodeURIComponent(name)}`, { method: 'POST', body: data });
  const text = await r.text();
  if (!r.ok) throw new Error(`upload ${name}: ${r.status} ${text.trim()}`);
  return JSON.parse(text).path;
}

// ---- themes: light (default) and dark, by CSS variables on <body> ------------

// The canvas colours of the theme now in force (read from its CSS variables).
export const theme = {};
function readTheme() {
  const cs = getComputedStyle(document.body);
  for (const k of ['canvas', 'grid', 'plate', 'plate-fg', 'plot']) theme[k] = cs.getPropertyValue(`--${k}`).trim();
}
// The theme button toggles body.dark; the choice is kept in localStorage.
export function setupTheme(button) {
  const set = (dark) => {
    document.body.classList.toggle('dark', dark);
    try { localStorage.setItem('pa-theme', dark ? 'dark' : 'light'); } catch { /* private mode */ }
    readTheme();
  };
  let saved = null;
  try { saved = localStorage.getItem('pa-theme'); } catch { /* private mode */ }
  set(saved === 'dark');
  button.onclick = () => set(!document.body.classList.contains('dark'));
}

export function fmt(v, d = 2) { return Number.isFinite(v) ? v.toFixed(d) : '-'; }
