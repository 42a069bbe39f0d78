/* metrics.c - /metrics in the Prometheus text format 0.0.4 (base units,
 * _total counters, _seconds histograms) and the process table the viewer
 * shows: the figures `playarea status` prints, read from the instance's
 * health blocks and /proc, plus the gateway's own counters. */
#define _GNU_SOURCE
#include "json_int.h"
#include "web_int.h"

#include "pa_proc.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const double pa_web_buckets[PA_WEB_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};

const char *const pa_web_ws_ch_name[WS_CH_COUNT] = {
    "ws_state", "ws_scan", "ws_world", "ws_map", "ws_reply", "ws_status"};

static const char *const proc_name[PA_PROC_COUNT] = {"launcher", "sim",
                                                     "render", "netgw"};

void pa_hist_observe(pa_hist *h, double v) {
  int i = 0;
  while (i < PA_WEB_BUCKETS && v > pa_web_buckets[i])
    i++;
  h->n[i]++;
  h->count++;
  h->sum += v;
}

int pa_metrics_init(pa_web *w) {
  int n = 0;
  while (pa_json_action_name(n))
    n++;
  w->n_actions = n;
  w->latency = calloc((size_t)n + 1, sizeof *w->latency);
  return w->latency ? 0 : -1;
}

void pa_metrics_free(pa_web *w) {
  free(w->latency);
  w->latency = NULL;
}

void pa_metrics_request(pa_netgw *g, const char *action, int64_t ns) {
  pa_web *w = g->web;
  if (!w || !w->latency)
    return;
  const jaction *a = action ? pa_json_action_find(action) : NULL;
  int i = a ? pa_json_action_id(a) : w->n_actions;
  if (i < 0 || i > w->n_actions)
    i = w->n_actions;
  pa_hist_observe(&w->latency[i], (double)ns / 1e9);
}

/* Each live tick: pa-sim's mean loop period since the last one, and the
 * real-time factor over about a second. */
void pa_metrics_sample(pa_web *w) {
  pa_netgw *g = w->g;
  const pa_health *h = &g->ctl->health[PA_PROC_SIM];
  uint64_t loops = __atomic_load_n(&h->loops, __ATOMIC_RELAXED);
  pa_tick hdr;
  if (!pa_gw_latest_header(g, &hdr))
    return;
  const pa_tick *t = &hdr;
  if (w->last_wall_ns && loops > w->last_loops && t->wall_ns > w->last_wall_ns)
    pa_hist_observe(&w->sim_period, (double)(t->wall_ns - w->last_wall_ns) /
                                        1e9 / (double)(loops - w->last_loops));
  w->last_loops = loops;
  w->last_wall_ns = t->wall_ns;
  int64_t now = pa_now_ns();
  if (!w->rtf_wall_ns || t->sim_time < w->rtf_sim_time) {
    w->rtf_wall_ns = now;
    w->rtf_sim_time = t->sim_time;
  } else if (now - w->rtf_wall_ns >= 1000000000) {
    w->rtf = (t->sim_time - w->rtf_sim_time) /
             ((double)(now - w->rtf_wall_ns) / 1e9);
    w->rtf_wall_ns = now;
    w->rtf_sim_time = t->sim_time;
  }
}

/* ---- text format
 * -----------------------------------------------------------*/

static void family(struct evbuffer *b, const char *name, const char *type,
                   const char *help) {
  evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                      type);
}

static void hist(struct evbuffer *b, const char *name, const char *labels,
                 const pa_hist *h) {
  uint64_t cum = 0;
  const char *sep = labels[0] ? "," : "";
  for (int i = 0; i < PA_WEB_BUCKETS; i++) {
    cum += h->n[i];
    evbuffer_add_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep,
                        pa_web_buckets[i], (unsigned long long)cum);
  }
  cum += h->n[PA_WEB_BUCKETS];
  evbuffer_add_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                      (unsigned long long)cum);
  const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
  evbuffer_add_printf(b, "%s_sum%s%s%s %.9g\n%s_count%s%s%s %llu\n", name, open,
                      labels, close, h->sum, name, open, labels, close,
                      (unsigned long long)h->count);
}

typedef struct proc_view {
  bool alive;
  pa_health h;
  double cpu_s; /* < 0: unknown */
  long rss_kb;
} proc_view;

static void read_procs(pa_netgw *g, proc_view v[PA_PROC_COUNT]) {
  for (int p = 0; p < PA_PROC_COUNT; p++) {
    v[p].h = g->ctl->health[p]; /* a monitoring copy; may be a tick old */
    v[p].alive = v[p].h.pid > 0 && kill(v[p].h.pid, 0) == 0;
    int64_t ms = v[p].alive ? pa_proc_cpu_ms(v[p].h.pid) : -1;
    v[p].cpu_s = ms >= 0 ? (double)ms / 1e3 : -1;
    v[p].rss_kb = v[p].alive ? pa_proc_rss_kb(v[p].h.pid) : -1;
  }
}

void pa_metrics_write(pa_web *w, struct evbuffer *b) {
  pa_netgw *g = w->g;
  proc_view v[PA_PROC_COUNT];
  read_procs(g, v);
  char l[64];
  family(b, "playarea_process_up", "gauge",
         "1 when the process runs and is ready");
  for (int p = 0; p < PA_PROC_COUNT; p++)
    evbuffer_add_printf(b, "playarea_process_up{process=\"%s\"} %d\n",
                        proc_name[p], v[p].alive && v[p].h.ready);
  family(b, "playarea_process_restarts_total", "counter",
         "times the launcher restarted the process");
  for (int p = 0; p < PA_PROC_COUNT; p++)
    evbuffer_add_printf(b,
                        "playarea_process_restarts_total{process=\"%s\"} %u\n",
                        proc_name[p], v[p].h.restarts);
  family(b, "playarea_process_cpu_seconds_total", "counter",
         "user + system CPU time of the running process");
  for (int p = 0; p < PA_PROC_COUNT; p++)
    if (v[p].cpu_s >= 0)
      evbuffer_add_printf(b,
                          "playarea_process_cpu_seconds_total{process=\"%s\"} "
                          "%.3f\n",
                          proc_name[p], v[p].cpu_s);
  family(b, "playarea_process_resident_memory_bytes", "gauge",
         "resident set size (VmRSS)");
  for (int p = 0; p < PA_PROC_COUNT; p++)
    if (v[p].rss_kb >= 0)
      evbuffer_add_printf(
          b, "playarea_process_resident_memory_bytes{process=\"%s\"} %ld\n",
          proc_name[p], v[p].rss_kb * 1024);
  family(b, "playarea_process_loops_total", "counter",
         "loop iterations (sim ticks, render frames, gateway events)");
  for (int p = 0; p < PA_PROC_COUNT; p++)
    evbuffer_add_printf(b,
                        "playarea_process_loops_total{process=\"%s\"} %llu\n",
                        proc_name[p], (unsigned long long)v[p].h.loops);
  family(b, "playarea_process_overruns_total", "counter",
         "missed loop deadlines");
  for (int p = 0; p < PA_PROC_COUNT; p++)
    evbuffer_add_printf(
        b, "playarea_process_overruns_total{process=\"%s\"} %llu\n",
        proc_name[p], (unsigned long long)v[p].h.overruns);
  family(b, "playarea_process_loop_period_p99_seconds", "gauge",
         "99th percentile loop period over the process's last window");
  for (int p = 0; p < PA_PROC_COUNT; p++)
    evbuffer_add_printf(
        b, "playarea_process_loop_period_p99_seconds{process=\"%s\"} %.9f\n",
        proc_name[p], (double)v[p].h.period_p99_ns / 1e9);

  const pa_health *sh = &v[PA_PROC_SIM].h;
  family(b, "playarea_sim_ticks_total", "counter", "simulation ticks run");
  evbuffer_add_printf(b, "playarea_sim_ticks_total %llu\n",
                      (unsigned long long)sh->counters[PA_SIM_CTR_TICK]);
  family(b, "playarea_sim_scans_total", "counter", "laser scans published");
  evbuffer_add_printf(b, "playarea_sim_scans_total %llu\n",
                      (unsigned long long)sh->counters[PA_SIM_CTR_SCANS]);
  const pa_tick *t = pa_gw_latest(g);
  family(b, "playarea_sim_time_seconds", "gauge", "simulated time");
  evbuffer_add_printf(b, "playarea_sim_time_seconds %.6f\n",
                      t ? t->sim_time : 0.0);
  family(b, "playarea_sim_real_time_factor", "gauge",
         "simulated seconds per wall-clock second over the last second");
  evbuffer_add_printf(b, "playarea_sim_real_time_factor %.4f\n", w->rtf);
  family(b, "playarea_sim_robots", "gauge", "robots in the world");
  evbuffer_add_printf(b, "playarea_sim_robots %u\n", t ? t->robot_count : 0u);
  family(b, "playarea_sim_loop_period_seconds", "histogram",
         "pa-sim's mean loop period per 50 ms sample");
  hist(b, "playarea_sim_loop_period_seconds", "", &w->sim_period);

  family(b, "playarea_netgw_clients", "gauge",
         "connected TCP clients (browser connections included)");
  evbuffer_add_printf(b, "playarea_netgw_clients{transport=\"tcp\"} %u\n",
                      g->n_clients);
  evbuffer_add_printf(b, "playarea_netgw_clients{transport=\"ws\"} %u\n",
                      w->n_ws);
  const pa_health *nh = &v[PA_PROC_NETGW].h;
  family(b, "playarea_netgw_frames_sent_total", "counter",
         "frames sent per channel (UDP datagrams, WebSocket messages)");
  static const struct {
    const char *name;
    int ctr;
  } udp[] = {{"odom", PA_NETGW_CTR_ODOM_FRAMES},
             {"scan", PA_NETGW_CTR_SCAN_FRAMES},
             {"camera", PA_NETGW_CTR_CAM_FRAMES}};
  for (size_t i = 0; i < sizeof udp / sizeof udp[0]; i++)
    evbuffer_add_printf(
        b, "playarea_netgw_frames_sent_total{channel=\"%s\"} %llu\n",
        udp[i].name, (unsigned long long)nh->counters[udp[i].ctr]);
  for (int c = 0; c < WS_CH_COUNT; c++)
    evbuffer_add_printf(
        b, "playarea_netgw_frames_sent_total{channel=\"%s\"} %llu\n",
        pa_web_ws_ch_name[c], (unsigned long long)w->ws_frames[c]);
  family(b, "playarea_netgw_sent_bytes_total", "counter",
         "bytes sent per channel (udp = every UDP channel)");
  evbuffer_add_printf(b,
                      "playarea_netgw_sent_bytes_total{channel=\"udp\"} %llu\n",
                      (unsigned long long)nh->bytes_sent);
  for (int c = 0; c < WS_CH_COUNT; c++)
    evbuffer_add_printf(
        b, "playarea_netgw_sent_bytes_total{channel=\"%s\"} %llu\n",
        pa_web_ws_ch_name[c], (unsigned long long)w->ws_bytes[c]);
  family(b, "playarea_netgw_frames_dropped_total", "counter",
         "frames not sent: a full socket (udp) or a slow browser (ws)");
  evbuffer_add_printf(b,
                      "playarea_netgw_frames_dropped_total{transport=\"udp\"} "
                      "%llu\n",
                      (unsigned long long)nh->frames_dropped);
  evbuffer_add_printf(b,
                      "playarea_netgw_frames_dropped_total{transport=\"ws\"} "
                      "%llu\n",
                      (unsigned long long)w->ws_dropped);
  family(b, "playarea_netgw_http_requests_total", "counter",
         "HTTP requests served (401s included)");
  evbuffer_add_printf(b, "playarea_netgw_http_requests_total %llu\n",
                      (unsigned long long)w->http_requests);
  family(b, "playarea_netgw_busy_total", "counter",
         "commands refused or lost: the command queue was full");
  evbuffer_add_printf(b, "playarea_netgw_busy_total %llu\n",
                      (unsigned long long)g->busy);
  family(b, "playarea_netgw_limit_events_total", "counter",
         "what the connection limits did, per reason (docs/operations.md, "
         "Limits)");
  for (int e = 0; pa_lim_event_name(e); e++)
    evbuffer_add_printf(b,
                        "playarea_netgw_limit_events_total{reason=\"%s\"} "
                        "%llu\n",
                        pa_lim_event_name(e),
                        (unsigned long long)g->lim.events[e]);
  family(b, "playarea_netgw_limit_bytes_dropped_total", "counter",
         "bytes of stale frames not sent to slow clients");
  evbuffer_add_printf(b, "playarea_netgw_limit_bytes_dropped_total %llu\n",
                      (unsigned long long)g->lim.bytes_dropped);
  family(b, "playarea_netgw_request_duration_seconds", "histogram",
         "JSON request arrival to reply, per action");
  for (int i = 0; i <= w->n_actions; i++) {
    if (!w->latency[i].count)
      continue;
    const char *name = i < w->n_actions ? pa_json_action_name(i) : "unknown";
    snprintf(l, sizeof l, "action=\"%s\"", name);
    hist(b, "playarea_netgw_request_duration_seconds", l, &w->latency[i]);
  }
}

char *pa_web_status_json(pa_netgw *g) {
  proc_view v[PA_PROC_COUNT];
  read_procs(g, v);
  int64_t now = pa_now_ns();
  json_t *a = json_array();
  for (int p = 0; a && p < PA_PROC_COUNT; p++) {
    const pa_health *h = &v[p].h;
    const char *state = !h->pid       ? "down"
                        : !v[p].alive ? "dead"
                        : h->ready    ? "up"
                                      : "start";
    json_t *o = json_pack(
        "{s:s, s:i, s:s, s:f, s:i, s:f, s:f, s:I, s:f, s:f, s:I, s:I, s:i}",
        "process", proc_name[p], "pid", (int)h->pid, "state", state, "uptime_s",
        v[p].alive && h->start_ns ? (double)(now - h->start_ns) / 1e9 : 0.0,
        "restarts", (int)h->restarts, "cpu_s", v[p].cpu_s, "rss_mb",
        v[p].rss_kb >= 0 ? (double)v[p].rss_kb / 1024.0 : -1.0, "loops",
        (json_int_t)h->loops, "p50_ms", (double)h->period_p50_ns / 1e6,
        "p99_ms", (double)h->period_p99_ns / 1e6, "overruns",
        (json_int_t)h->overruns, "frames", (json_int_t)h->frames_sent,
        "clients", (int)h->clients);
    json_array_append_new(a, o);
  }
  char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
  json_decref(a);
  return s;
}
