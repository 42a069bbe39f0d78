// harness.mjs - a real playarea stack on OS-picked ports, Debian's chromium
// through playwright-core, a TCP JSON client, and cleanup of all of them
// even when a check fails.
import { spawn, execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const BIN = process.env.PA_BIN_DIR || path.resolve(import.meta.dirname, '../../build/bin');
export const SRC = process.env.PA_SOURCE_DIR || path.resolve(import.meta.dirname, '../..');
const CHROMIUM = process.env.PA_CHROMIUM || '/usr/bin/chromium';
const START_MS = 60000;

const cleanups = [];
export function onCleanup(fn) { cleanups.push(fn); }
export async function cleanup() {
  while (cleanups.length) {
    try { await cleanups.pop()(); } catch (e) { console.error('cleanup:', e.message); }
  }
}

let counter = 0;
// The launcher with --tcp_port 0 --http_port=-1; resolves once both ports
// are known: TCP from the ready line, HTTP from pa-netgw's "web:" log line.
export async function startStack(args = []) {
  const instance = `t${process.pid}-web-${++counter}`;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `pa-web-${instance}-`));
  onCleanup(() => fs.rmSync(tmp, { recursive: true, force: true }));
  // SSL vision goes to a port this test holds, never to a user's 10020.
  const vision = dgram.createSocket('udp4');
  await new Promise((r) => vision.bind(0, '127.0.0.1', r));
  onCleanup(() => vision.close());
  const argv = ['--tcp_port', '0', '--http_port=-1', '--instance', instance,
    '--data_dir', tmp, '--upload_dir', tmp,
    '--ssl_vision_port', String(vision.address().port), ...args];
  const proc = spawn(path.join(BIN, 'playarea'), argv, {
    stdio: ['ignore', 'pipe', 'pipe'], detached: true,
    env: { ...process.env, LIBGL_ALWAYS_SOFTWARE: '1' },
  });
  let log = '';
  const st = { instance, tmp, proc, log: () => log };
  onCleanup(() => stopStack(st));
  await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`stack not ready in ${START_MS} ms\n${log}`)), START_MS);
    const check = () => {
      const m = /^tcp (\S+):(\d+) instance (\S+)$/m.exec(out);
      const h = /web: http:\/\/([\d.]+):(\d+)\//.exec(log);
      if (m && h) {
        clearTimeout(timer);
        st.tcpPort = Number(m[2]);
        st.httpPort = Number(h[2]);
        st.url = `http://127.0.0.1:${st.httpPort}`;
        resolve();
      }
    };
    proc.stdout.on('data', (d) => { out += d; check(); });
    proc.stderr.on('data', (d) => { log += d; check(); });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`playarea exited ${code}\n${log}`)); });
  });
  proc.removeAllListeners('exit');
  return st;
}

export async function stopStack(st) {
  if (st.stopped) return;
  st.stopped = true;
  if (st.proc.exitCode === null && st.proc.signalCode === null) {
    const done = new Promise((r) => st.proc.once('exit', r));
    st.proc.kill('SIGTERM');
    const t = setTimeout(() => { try { process.kill(-st.proc.pid, 'SIGKILL'); } catch { /* gone */ } }, 20000);
    await done;
    clearTimeout(t);
  }
  try { process.kill(-st.proc.pid, 'SIGKILL'); } catch { /* the group is gone */ }
  for (const f of fs.readdirSync('/dev/shm')) {
    if (f.startsWith(`playarea.${st.instance}.`)) fs.rmSync(path.join('/dev/shm', f), { force: true });
  }
  const bad = /ERROR: (Address|Leak)Sanitizer|runtime error:/.exec(st.log());
  if (bad) throw new Error(`sanitizer report from the stack:\n${st.log()}`);
  if (st.proc.exitCode !== 0) throw new Error(`playarea exited ${st.proc.exitCode ?? st.proc.signalCode} after SIGTERM\n${st.log().slice(-3000)}`);
}

export async function browser() {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pa-web-chromium-'));
  onCleanup(() => fs.rmSync(userDir, { recursive: true, force: true }));
  const ctx = await chromium.launchPersistentContext(userDir, {
    executablePath: CHROMIUM, headless: true, acceptDownloads: true,
    viewport: { width: 1200, height: 800 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  onCleanup(() => ctx.close());
  const page = ctx.pages()[0] || await ctx.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(m.text()); });
  return page;
}

// A TCP JSON v2 client: request(action, data) resolves with the reply.
export async function tcpClient(port) {
  const sock = net.connect(port, '127.0.0.1');
  onCleanup(() => sock.destroy());
  await new Promise((res, rej) => { sock.once('connect', res); sock.once('error', rej); });
  let buf = '';
  const waiting = [];
  sock.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      waiting.shift()?.(JSON.parse(line));
    }
  });
  return {
    request(action, data = {}, type = 'command') {
      return new Promise((res) => {
        waiting.push(res);
        sock.write(`${JSON.stringify({ type, protocol_version: 2, action, data })}\n`);
      });
    },
  };
}

export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`ok - ${what}`);
}

export async function until(fn, what, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) { console.log(`ok - ${what}`); return v; }
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function paMap(...args) {
  return execFileSync(path.join(BIN, 'pa-map'), args, { encoding: 'utf8' });
}

// Runs main() and always cleans up; the exit code tells ctest.
export async function run(main) {
  const kill = setTimeout(() => { console.error('test timed out'); cleanup().finally(() => process.exit(1)); }, 170000);
  let rc = 0;
  try {
    await main();
  } catch (e) {
    console.error(`FAIL: ${e.stack || e.message}`);
    rc = 1;
  }
  try { await cleanup(); } catch (e) { console.error(`FAIL in cleanup: ${e.message}`); rc = 1; }
  clearTimeout(kill);
  process.exit(rc);
}
