// The HTTP side without a browser: /metrics parsed by prometheus_client and
// checked by promtool; pages, refused paths and uploads; --token on pages
// and /ws; and /ws at 100 robots: 20 Hz to a reading client while a client
// that reads nothing skips frames (counted) without slowing the sim.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import WebSocket from 'ws';
import { startStack, tcpClient, run, check, until, stopStack } from './harness.mjs';

const metrics = async (st) => (await fetch(`${st.url}/metrics`)).text();
const sample = (text, name) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);

// A request line sent as it is (fetch would normalise the dots away).
function raw(port, target) {
  return new Promise((res, rej) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    let out = '';
    s.on('data', (d) => { out += d; });
    s.on('end', () => res(out));
    s.on('error', rej);
  });
}

function openWs(url, opts) {
  const ws = new WebSocket(url, opts);
  return new Promise((res, rej) => {
    ws.once('open', () => res(ws));
    ws.once('unexpected-response', (req, resp) => rej(new Error(`HTTP ${resp.statusCode}`)));
    ws.once('error', rej);
  });
}

run(async () => {
  // ---- 100 robots: metrics, pages, live frames, backpressure ----
  const st = await startStack(['--robots', '100']);
  const tcp = await tcpClient(st.tcpPort);
  for (const a of ['get_pose', 'list_robots', 'ping']) await tcp.request(a, a === 'get_pose' ? { robot: 3 } : {});
  await tcp.request('no_such_action');

  const idx = await fetch(`${st.url}/`);
  check(idx.status === 200 && /playarea viewer/.test(await idx.text()), 'GET / serves the viewer');
  const ed = await fetch(`${st.url}/editor`);
  check(ed.status === 200 && /map editor/.test(await ed.text()), 'GET /editor serves the editor');
  const js = await fetch(`${st.url}/common.js`);
  check(js.status === 200 && /javascript/.test(js.headers.get('content-type')), 'modules served as JavaScript');
  for (const bad of ['/../CMakeLists.txt', '/%2e%2e/CMakeLists.txt', '/..%2fREADME.md', '/nope.html', '/web/../README.md']) {
    const r = await fetch(`${st.url}${bad}`);
    check(r.status === 404, `${bad} refused (${r.status})`);
  }
  for (const bad of ['/../README.md', '/%2e%2e/README.md', '/..%2fREADME.md', '/./../../etc/passwd', '//etc/passwd']) {
    const r = await raw(st.httpPort, bad);
    check(/^HTTP\/1\.1 404/.test(r) && !/playarea|root:/.test(r.split('\r\n\r\n')[1] ?? ''), `raw ${bad} refused`);
  }
  const notUpgrade = await raw(st.httpPort, '/ws');
  check(/^HTTP\/1\.1 400/.test(notUpgrade), '/ws without an upgrade is 400');
  const huge = await new Promise((res) => {
    const s = net.connect(st.httpPort, '127.0.0.1', () => s.write(`GET /${'a'.repeat(20000)}`));
    let out = '';
    s.on('data', (d) => { out += d; });
    s.on('close', () => res(out));
    s.on('error', () => res(out));
  });
  check(!/200 OK/.test(huge), 'a request line longer than 8 KiB gets no page');
  const up1 = await fetch(`${st.url}/api/upload?name=../x.png`, { method: 'POST', body: 'x' });
  check(up1.status === 400, `upload outside the directory refused (${up1.status})`);
  const up2 = await fetch(`${st.url}/api/upload?name=x.sh`, { method: 'POST', body: 'x' });
  check(up2.status === 400, 'upload of another file type refused');
  const up3 = await fetch(`${st.url}/api/upload?name=ok.yaml`, { method: 'POST', body: 'a: 1\n' });
  check(up3.status === 200 && fs.readFileSync(path.join(st.tmp, 'ok.yaml'), 'utf8') === 'a: 1\n', 'upload writes into --upload_dir');

  // a reading client and one that reads nothing
  const fast = await openWs(`ws://127.0.0.1:${st.httpPort}/ws`);
  const slow = await openWs(`ws://127.0.0.1:${st.httpPort}/ws`);
  let states = 0, scans = 0, robots = 0;
  fast.on('message', (d, bin) => {
    if (bin) { if (Buffer.from(d).toString('latin1', 0, 4) === 'SCN2') scans++; return; }
    const m = JSON.parse(d.toString());
    if (m.type === 'state') { states++; robots = m.robots.length; }
  });
  slow.pause(); // stops reading: the kernel buffers fill, then the gateway's queue
  const m0 = await metrics(st);
  const tick0 = sample(m0, 'playarea_sim_ticks_total'), wall0 = Date.now();
  const s0 = states;
  await new Promise((r) => setTimeout(r, 3000));
  const hz = (states - s0) / ((Date.now() - wall0) / 1000);
  const m1 = await metrics(st);
  const rtf = (sample(m1, 'playarea_sim_ticks_total') - tick0) / 200 / ((Date.now() - wall0) / 1000);
  console.log(`# 100 robots: ${hz.toFixed(1)} state frames/s to a reading browser, ${scans} scan frames, sim ${rtf.toFixed(2)} x real time (loaded machine)`);
  check(robots === 100, 'state frames carry 100 robots');
  check(hz >= 12, `a reading client gets the 20 Hz frames (${hz.toFixed(1)} Hz)`);
  check(rtf > 0.7, `the sim keeps up (${rtf.toFixed(2)} x real time)`);
  const dropped = sample(m1, 'playarea_netgw_frames_dropped_total{transport="ws"}');
  check(dropped > 0, `the client that reads nothing skips frames (${dropped} dropped)`);
  check(sample(m1, 'playarea_netgw_clients{transport="ws"}') === 2, 'two /ws clients counted');
  slow.resume();
  fast.close();
  slow.terminate();

  const file = path.join(st.tmp, 'metrics.txt');
  fs.writeFileSync(file, m1);
  const py = execFileSync('/usr/bin/python3', [path.join(import.meta.dirname, 'check_metrics.py'), file,
    'get_pose', 'list_robots', 'ping', 'unknown'], { encoding: 'utf8' });
  check(/playarea_sim_loop_period_seconds histogram/.test(py), 'prometheus_client parses /metrics with every family');
  if (fs.existsSync('/usr/bin/promtool')) {
    const out = execFileSync('/usr/bin/promtool', ['check', 'metrics'], { input: m1, encoding: 'utf8' });
    check(out.trim() === '', `promtool check metrics: clean${out.trim() ? `: ${out}` : ''}`);
  }
  await stopStack(st);

  // ---- --token: pages, /metrics and /ws ----
  const sec = await startStack(['--token', 's3cret']);
  check((await fetch(`${sec.url}/`)).status === 401, 'with --token: / without it is 401');
  check((await fetch(`${sec.url}/metrics`)).status === 401, 'with --token: /metrics without it is 401');
  check((await fetch(`${sec.url}/?token=wrong`)).status === 401, 'a wrong token is 401');
  const ok = await fetch(`${sec.url}/?token=s3cret`);
  const cookie = ok.headers.get('set-cookie') || '';
  check(ok.status === 200 && /pa_token=s3cret/.test(cookie) && /HttpOnly/.test(cookie), '?token= opens the page and sets the cookie');
  check((await fetch(`${sec.url}/metrics`, { headers: { Authorization: 'Bearer s3cret' } })).status === 200, 'Authorization: Bearer works');
  let refused = null;
  try { await openWs(`ws://127.0.0.1:${sec.httpPort}/ws`); } catch (e) { refused = e.message; }
  check(refused === 'HTTP 401', `/ws without the token is refused (${refused})`);
  const ws = await openWs(`ws://127.0.0.1:${sec.httpPort}/ws`, { headers: { Cookie: 'pa_token=s3cret' } });
  const reply = await new Promise((res) => {
    ws.on('message', (d, bin) => { if (!bin) { const m = JSON.parse(d.toString()); if (m.request_id === 'a1') res(m); } });
    ws.send(JSON.stringify({ type: 'command', protocol_version: 2, request_id: 'a1', action: 'get_pose', data: { robot: 0 } }));
  });
  check(reply.success === true, '/ws with the cookie runs requests without a separate auth');
  ws.close();
  await until(async () => (await tcpClient(sec.tcpPort)) !== null, 'TCP still served');
});
