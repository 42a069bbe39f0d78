// bench_ws.mjs - /ws at 100 robots (not a ctest): state frames per second to
// a reading browser, frames skipped for one that reads nothing, the sim's
// real-time factor and pa-netgw's CPU, with and without the two clients, in
// one run; with agents walking (moving obstacles), also the world frames
// the reading browser got. node tests/web/bench_ws.mjs [robots] [seconds] [agents]
import WebSocket from 'ws';
import { startStack, run, tcpClient } from './harness.mjs';

const robots = Number(process.argv[2] || 100), secs = Number(process.argv[3] || 5);
const agents = Number(process.argv[4] || 0);
const get = (t, n) => Number(new RegExp(`^${n.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(t)?.[1]);

run(async () => {
  const st = await startStack(['--robots', String(robots)]);
  const metrics = async () => (await fetch(`${st.url}/metrics`)).text();
  async function window(label, during) {
    const m0 = await metrics(), t0 = Date.now();
    await new Promise((r) => setTimeout(r, secs * 1000));
    const m1 = await metrics(), dt = (Date.now() - t0) / 1000;
    const cpu = (get(m1, 'playarea_process_cpu_seconds_total{process="netgw"}') -
      get(m0, 'playarea_process_cpu_seconds_total{process="netgw"}')) / dt;
    const rtf = (get(m1, 'playarea_sim_ticks_total') - get(m0, 'playarea_sim_ticks_total')) / 200 / dt;
    const r = { label, rtf, netgw_cpu: cpu, ...(during ? during(dt, m0, m1) : {}) };
    console.log(JSON.stringify(r));
    return r;
  }
  if (agents) { // on free spots of a grid over the map
    const tcp = await tcpClient(st.tcpPort);
    const mi = (await tcp.request('get_map_info')).data;
    const w = mi.width * mi.resolution, h = mi.height * mi.resolution;
    let n = 0;
    for (let y = mi.origin[1] + 0.5; y < mi.origin[1] + h && n < agents; y += 0.7)
      for (let x = mi.origin[0] + 0.5; x < mi.origin[0] + w && n < agents; x += 0.7)
        if ((await tcp.request('spawn_agent', { behaviour: 'random', radius: 0.1, speed: 0.5, pose: [x, y, 0] })).success) n++;
    console.log(`${n} agents walking`);
  }
  await new Promise((r) => setTimeout(r, 1000));
  const base = await window('no browser');
  const fast = new WebSocket(`ws://127.0.0.1:${st.httpPort}/ws`);
  const slow = new WebSocket(`ws://127.0.0.1:${st.httpPort}/ws`);
  await Promise.all([fast, slow].map((w) => new Promise((r) => w.once('open', r))));
  slow.pause();
  let states = 0, bytes = 0, worlds = 0;
  fast.on('message', (d, bin) => {
    bytes += d.length;
    const head = bin ? '' : d.toString('latin1', 0, 16);
    if (head.includes('"state"')) states++;
    else if (head.includes('"world"')) worlds++;
  });
  await new Promise((r) => setTimeout(r, 1000));
  states = 0;
  bytes = 0;
  worlds = 0;
  const withWs = await window('1 reading + 1 stalled browser', (dt, m0, m1) => ({
    state_hz: states / dt, world_frames: worlds, mbytes_per_s: bytes / dt / 1e6,
    dropped_per_s: (get(m1, 'playarea_netgw_frames_dropped_total{transport="ws"}') -
      get(m0, 'playarea_netgw_frames_dropped_total{transport="ws"}')) / dt,
  }));
  console.log(`ratio: sim RTF with/without browsers ${(withWs.rtf / base.rtf).toFixed(3)}; ` +
    `netgw CPU ${(100 * base.netgw_cpu).toFixed(1)}% -> ${(100 * withWs.netgw_cpu).toFixed(1)}%`);
  fast.close();
  slow.terminate();
});
