// plots.js - the viewer's robot panel plots: the selected robot's v and w
// over the last seconds of sim time, and its newest scan seen from above in
// the robot's frame (x ahead, up). Plain 2-D canvas, redrawn each frame.

const WINDOW_S = 10; // [s] of sim time on the v/w plot
export const V_COLOUR = 'rgb(37,99,235)';
export const W_COLOUR = 'rgb(234,88,12)';
export const SCAN_COLOUR = 'rgb(220,38,38)';

// History of the selected robot's [sim_time, v, w]; a new robot, a reset
// (time going back) or a pause does not mix into it.
export function recordTwist(hist, m, id) {
  const r = m.robots.find((q) => q[0] === id);
  if (hist.robot !== id || (hist.t.length && m.sim_time < hist.t[hist.t.length - 1])) {
    hist.robot = id;
    hist.t = [];
    hist.v = [];
    hist.w = [];
  }
  if (!r || (hist.t.length && m.sim_time === hist.t[hist.t.length - 1])) return;
  hist.t.push(m.sim_time);
  hist.v.push(r[4]);
  hist.w.push(r[5]);
  while (hist.t.length && hist.t[0] < m.sim_time - WINDOW_S) {
    hist.t.shift();
    hist.v.shift();
    hist.w.shift();
  }
}

function fitCanvas(c) {
  const w = c.clientWidth, h = c.clientHeight;
  if (c.width !== w || c.height !== h) {
    c.width = w;
    c.height = h;
  }
  return c.getContext('2d');
}

// v (m/s) and w (rad/s) against time, one symmetric scale for both.
export function drawTwist(c, hist, theme) {
  const ctx = fitCanvas(c);
  const W = c.width, H = c.height;
  ctx.fillStyle = theme.plot;
  ctx.fillRect(0, 0, W, H);
  const n = hist.t?.length ?? 0;
  let m = 0.5;
  for (let i = 0; i < n; i++) m = Math.max(m, Math.abs(hist.v[i]), Math.abs(hist.w[i]));
  m = Math.ceil(m * 2) / 2;
  const t1 = n ? hist.t[n - 1] : 0, t0 = t1 - WINDOW_S;
  const X = (t) => 30 + ((t - t0) / WINDOW_S) * (W - 36), Y = (v) => H / 2 - (v / m) * (H / 2 - 8);
  ctx.strokeStyle = theme.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const v of [-m, -m / 2, 0, m / 2, m]) { ctx.moveTo(30, Math.round(Y(v)) + 0.5); ctx.lineTo(W - 6, Math.round(Y(v)) + 0.5); }
  ctx.stroke();
  ctx.fillStyle = theme['plate-fg'];
  ctx.font = '11px system-ui, sans-serif';
  for (const v of [-m, 0, m]) ctx.fillText(String(v), 2, Y(v) + 4);
  for (const [key, col] of [['v', V_COLOUR], ['w', W_COLOUR]]) {
    ctx.strokeStyle = col;
    ctx.lineWidth = 2;
    ctx.beginPath();
    for (let i = 0; i < n; i++) (i ? ctx.lineTo : ctx.moveTo).call(ctx, X(hist.t[i]), Y(hist[key][i]));
    ctx.stroke();
  }
  ctx.font = '600 11px system-ui, sans-serif';
  ctx.fillStyle = V_COLOUR;
  ctx.fillText('v m/s', W - 90, 12);
  ctx.fillStyle = W_COLOUR;
  ctx.fillText('w rad/s', W - 50, 12);
  return { n, scale: m, X, Y };
}

// The scan's returns as points in the robot frame, range rings every metre.
export function drawScan(c, s, theme) {
  const ctx = fitCanvas(c);
  const W = c.width, H = c.height;
  ctx.fillStyle = theme.plot;
  ctx.fillRect(0, 0, W, H);
  if (!s) return { points: 0 };
  // the scale: the farthest return (not range_max, often far beyond them)
  let far = 0;
  for (const r of s.ranges) if (r > 0 && r < s.range_max) far = Math.max(far, r);
  const rmax = far > 0 ? far * 1.05 : s.range_max > 0 ? s.range_max : 5;
  const ring = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50].find((m) => rmax / m <= 5) ?? 100;
  const k = (Math.min(W, H) / 2 - 6) / rmax, cx = W / 2, cy = H / 2;
  ctx.strokeStyle = theme.grid;
  ctx.lineWidth = 1;
  for (let r = ring; r <= rmax; r += ring) { ctx.beginPath(); ctx.arc(cx, cy, r * k, 0, 2 * Math.PI); ctx.stroke(); }
  ctx.fillStyle = SCAN_COLOUR;
  let points = 0;
  for (let i = 0; i < s.ranges.length; i++) {
    const r = s.ranges[i];
    if (!(r > 0) || r >= s.range_max) continue; // no return
    const a = s.angle_min + i * s.angle_increment; // robot frame: x ahead = up
    ctx.fillRect(cx - r * Math.sin(a) * k - 1, cy - r * Math.cos(a) * k - 1, 3, 3);
    points++;
  }
  ctx.fillStyle = theme['plate-fg'];
  ctx.beginPath();
  ctx.moveTo(cx, cy - 7);
  ctx.lineTo(cx - 5, cy + 5);
  ctx.lineTo(cx + 5, cy + 5);
  ctx.fill();
  ctx.font = '11px system-ui, sans-serif';
  ctx.fillText(`rings ${ring} m`, 4, H - 4);
  return { points, k, cx, cy };
}
