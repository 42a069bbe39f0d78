/* registry.c - the metrics registry: histogram buckets, the Prometheus
 * text format's family and histogram lines, request durations of every
 * front-end by request name, the kept ports, and each front-end's own
 * families through its row (web/ serves them on /metrics). */
#define _GNU_SOURCE
#include "netgw_int.h"

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

const double pa_web_buckets[PA_WEB_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};

void pa_hist_observe(pa_hist *h, double v) {
  int i = 0;
  while (i < PA_WEB_BUCKETS && v > pa_web_buckets[i])
    i++;
  h->n[i]++;
  h->count++;
  h->sum += v;
}

void pa_metrics_family(struct evbuffer *b, const char *name, const char *type,
                       const char *help) {
  evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                      type);
}

void pa_metrics_hist(struct evbuffer *b, const char *name, const char *labels,
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

void pa_core_observe_request(pa_netgw *g, int id, const char *name,
                             int64_t ns) {
  int i = id >= 0 && id < PA_REQ_STATS_MAX && name ? id : PA_REQ_STATS_MAX;
  if (i < PA_REQ_STATS_MAX)
    g->req_name[i] = name;
  pa_hist_observe(&g->req_hist[i], (double)ns / 1e9);
}

static void ports_write(pa_netgw *g, struct evbuffer *b) {
  pa_metrics_family(b, "playarea_netgw_listen_port", "gauge",
                    "ports pa-netgw listens on (or sends to: kind dest), by "
                    "front-end; kept across pa-netgw restarts");
  static const char *const kind[] = {"", "tcp", "udp", "dest"};
  for (unsigned i = 0; i < PA_PORTS_MAX; i++) {
    const pa_port_rec *r = &g->ctl->ports[i];
    if (r->kind == PA_PORT_FREE || r->kind > PA_PORT_DEST || !r->up)
      continue;
    evbuffer_add_printf(b,
                        "playarea_netgw_listen_port{frontend=\"%.*s\","
                        "listener=\"%.*s\",kind=\"%s\"} %u\n",
                        PA_PORT_NAME_MAX, r->frontend, PA_PORT_NAME_MAX,
                        r->name, kind[r->kind], r->port);
  }
}

void pa_core_metrics_write(pa_netgw *g, struct evbuffer *b) {
  pa_metrics_family(b, "playarea_netgw_request_duration_seconds", "histogram",
                    "request arrival to reply, per action");
  char l[96];
  for (int i = 0; i <= PA_REQ_STATS_MAX; i++) {
    if (!g->req_hist[i].count)
      continue;
    const char *name = i < PA_REQ_STATS_MAX ? g->req_name[i] : "unknown";
    snprintf(l, sizeof l, "action=\"%s\"", name ? name : "unknown");
    pa_metrics_hist(b, "playarea_netgw_request_duration_seconds", l,
                    &g->req_hist[i]);
  }
  ports_write(g, b);
  pa_metrics_family(
      b, "playarea_netgw_limit_events_total", "counter",
      "what the connection limits did, per reason (docs/operations.md, "
      "Limits)");
  for (int e = 0; pa_lim_event_name(e); e++)
    evbuffer_add_printf(b,
                        "playarea_netgw_limit_events_total{reason=\"%s\"} "
                        "%llu\n",
                        pa_lim_event_name(e),
                        (unsigned long long)g->lim.events[e]);
  pa_metrics_family(b, "playarea_netgw_limit_bytes_dropped_total", "counter",
                    "bytes of stale frames not sent to slow clients");
  evbuffer_add_printf(b, "playarea_netgw_limit_bytes_dropped_total %llu\n",
                      (unsigned long long)g->lim.bytes_dropped);
  for (const pa_frontend *const *f = pa_frontends; *f; f++)
    if ((*f)->metrics)
      (*f)->metrics(g, b);
}
