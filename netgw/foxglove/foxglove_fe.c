/* foxglove_fe.c - the Foxglove front-end's row: the WebSocket server and
 * the MCAP recorder and replay as the core sees them (start, stop, pa-sim
 * replies, every command for a recording's /commands), its services for
 * the JSON actions (record_start, record_stop, replay_start, info) and its
 * metrics; and accepting (the upgrade request, its subprotocol and token). */
#define _GNU_SOURCE
#include "foxglove_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/listener.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int fox_start(pa_netgw *g, char *err, size_t err_sz) {
  g->fox = pa_fox_create(g, err, err_sz);
  if (!g->fox)
    return -1;
  const char *rec = g->def.record;
  if (!rec || !*rec)
    return 0;
  char path[PATH_MAX], e[512];
  /* a restarted pa-netgw continues into run.1.mcap, run.2.mcap, ... */
  if (pa_fox_record_next_path(g, rec, path, sizeof path, e, sizeof e) != 0 ||
      pa_fox_record_start(g->fox, path, NULL, 0, e, sizeof e) != 0) {
    snprintf(err, err_sz, "--record: %s", e);
    return -1;
  }
  pa_info("recording MCAP to %s", path);
  return 0;
}

/* ---- accepting ----------------------------------------------------- */

static const char *const protocols[] = {"foxglove.websocket.v1",
                                        "foxglove.sdk.v1", NULL};

static void head_free(fox_head *h, bool close_fd) {
  if (h->ev)
    event_free(h->ev);
  if (close_fd)
    evutil_closesocket(h->fd);
  free(h);
}

/* A refusal the client can read, then the end. */
static void head_refuse(fox_head *h, const char *status, const char *text) {
  char buf[512];
  int n = snprintf(buf, sizeof buf,
                   "HTTP/1.1 %s\r\nContent-Type: text/plain\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
                   status, strlen(text) + 1, text);
  if (n > 0 && (size_t)n < sizeof buf) {
    ssize_t w = send(h->fd, buf, (size_t)n, MSG_NOSIGNAL);
    (void)w;
  }
  head_free(h, true);
}

static void on_head(evutil_socket_t fd, short what, void *arg) {
  fox_head *h = arg;
  pa_fox *f = h->f;
  if (what & EV_TIMEOUT ||
      pa_now_ns() - h->start_ns > (int64_t)FOX_HEAD_TIMEOUT_S * 1000000000) {
    pa_lim_count(f->g, PA_LIM_IDLE);
    head_free(h, true); /* no whole upgrade request in time */
    return;
  }
  ssize_t r = recv(fd, h->buf + h->n, sizeof h->buf - 1 - h->n, 0);
  if (r < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (r <= 0) {
    head_free(h, true);
    return;
  }
  h->n += (size_t)r;
  h->buf[h->n] = 0;
  char *end = strstr(h->buf, "\r\n\r\n");
  if (!end) {
    if (h->n == sizeof h->buf - 1) {
      static const char resp[] = "HTTP/1.1 431 Request Header Fields Too "
                                 "Large\r\nConnection: close\r\n\r\n";
      ssize_t w = send(fd, resp, sizeof resp - 1, MSG_NOSIGNAL);
      (void)w;
      head_free(h, true);
    }
    return;
  }
  size_t head_len = (size_t)(end + 4 - h->buf);
  if (!pa_core_head_authed(f->g, h->buf, head_len)) {
    /* --token: ws://host:port/?token=... or Authorization: Bearer */
    f->refused_auth++;
    head_refuse(h, "401 Unauthorized",
                "not_authorized: this gateway has a --token: add ?token=... "
                "to the URL or an Authorization: Bearer header");
    return;
  }
  pa_core_client_seen(f->g);
  const char *why;
  uint32_t slot = pa_fox_conn_slot(f, h->addr, &why);
  if (slot == FOX_MAX_CONNS) {
    pa_warn("foxglove: refused a connection: %s", why);
    head_refuse(h, "503 Service Unavailable", why);
    return;
  }
  fox_conn *c = calloc(1, sizeof *c);
  if (!c) {
    head_free(h, true);
    return;
  }
  c->f = f;
  c->slot = slot;
  c->gen = ++f->gens;
  c->addr = h->addr;
  c->active_ns = pa_now_ns();
  struct pa_ws_limits lim = {.max_message = 1u << 20,
                             .max_queued = FOX_MAX_QUEUED,
                             .pauses = &f->g->lim.events[PA_LIM_PAUSED]};
  struct pa_ws_cbs cbs = {pa_fox_on_text, pa_fox_on_binary, pa_fox_on_close,
                          NULL};
  char err[256];
  /* pa_ws_accept owns fd from here, whatever it returns */
  evutil_socket_t sock = h->fd;
  event_free(h->ev);
  h->ev = NULL;
  c->ws = pa_ws_accept(f->g->base, sock, h->buf, head_len,
                       (const uint8_t *)h->buf + head_len, h->n - head_len,
                       protocols, &lim, &cbs, c, err, sizeof err);
  head_free(h, false);
  if (!c->ws) {
    pa_info("foxglove: refused a connection: %s", err);
    free(c);
    return;
  }
  pa_fox_refresh_world(
      f); /* before c is listed: its first message is serverInfo */
  f->conns[slot] = c;
  f->n_conns++;
  json_t *caps = json_pack("[s, s, s, s]", "clientPublish", "services", "time",
                           "parameters");
  pa_fox_send_json(
      c, json_pack("{s:s, s:s, s:o, s:[s], s:{s:s, s:s}, s:s}", "op",
                   "serverInfo", "name", "playarea", "capabilities", caps,
                   "supportedEncodings", "json", "metadata", "instance",
                   f->g->ctl->def.instance, "subprotocol",
                   pa_ws_subprotocol(c->ws), "sessionId", f->session));
  pa_fox_advertise_all(f, c);
  pa_fox_advertise_services(c);
  f->last_time_sent = -1; /* the new client gets the clock at once */
  pa_fox_arm(f);
}

void pa_fox_on_accept(struct evconnlistener *lis, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg) {
  (void)lis;
  pa_fox *f = arg;
  fox_head *h = calloc(1, sizeof *h);
  if (!h) {
    evutil_closesocket(fd);
    return;
  }
  h->f = f;
  h->fd = fd;
  h->start_ns = pa_now_ns();
  if (sa->sa_family == AF_INET && salen >= (int)sizeof(struct sockaddr_in))
    h->addr = ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
  evutil_make_socket_nonblocking(fd);
  h->ev = event_new(f->g->base, fd, EV_READ | EV_PERSIST, on_head, h);
  struct timeval tv = {FOX_HEAD_TIMEOUT_S, 0};
  if (!h->ev || event_add(h->ev, &tv) != 0)
    head_free(h, true);
}

static void fox_stop(pa_netgw *g) {
  pa_fox_destroy(g->fox); /* finishes a recording */
  g->fox = NULL;
}

static json_t *stats_json(const pa_mcap_stats *st) {
  return json_pack("{s:I, s:I, s:I, s:I, s:I}", "messages",
                   (json_int_t)st->messages, "chunks", (json_int_t)st->chunks,
                   "bytes", (json_int_t)st->bytes, "raw_bytes",
                   (json_int_t)st->raw_bytes, "dropped",
                   (json_int_t)st->dropped);
}

static json_t *info_json(pa_fox *f) {
  pa_fox_info i;
  pa_fox_get_info(f, &i);
  /* a recording whose writer failed (disk full) is not recording: it says
   * error and why until stop_record_mcap */
  bool failed = i.recording && i.record_error[0];
  json_t *d =
      json_pack("{s:i, s:i, s:I, s:I, s:I, s:b}", "port", (int)i.port,
                "clients", (int)i.clients, "sent", (json_int_t)i.sent,
                "dropped", (json_int_t)i.dropped, "jpeg_frames",
                (json_int_t)i.jpeg_frames, "recording", i.recording && !failed);
  if (i.recording) {
    json_t *r = stats_json(&i.rec);
    json_object_set_new(r, "path", json_string(i.record_path));
    json_object_set_new(r, "state",
                        json_string(failed ? "error" : "recording"));
    if (failed)
      json_object_set_new(r, "error", json_string(i.record_error));
    json_object_set_new(d, "record", r);
  }
  if (i.replay[0])
    json_object_set_new(
        d, "replay",
        json_pack("{s:s, s:i, s:i, s:i, s:s, s:s}", "state", i.replay, "pushed",
                  (int)i.replay_pushed, "total", (int)i.replay_total, "errors",
                  (int)i.replay_errors, "detail", i.replay_detail, "path",
                  i.replay_path ? i.replay_path : ""));
  return d;
}

#define RECORD_TOPICS_MAX 64

static json_t *record_start(pa_netgw *g, json_t *args, pa_status *st, char *err,
                            size_t err_sz) {
  const char *path = json_string_value(json_object_get(args, "path"));
  double seconds = json_number_value(json_object_get(args, "seconds"));
  json_t *tj = json_object_get(args, "topics");
  const char *topics[RECORD_TOPICS_MAX + 1];
  size_t n = json_array_size(tj);
  if (!path || n > RECORD_TOPICS_MAX) {
    *st = PA_ERR_INVALID_ACTION_SHAPE;
    snprintf(err, err_sz, "record_start: a path and at most %d topics",
             RECORD_TOPICS_MAX);
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    topics[i] = json_string_value(json_array_get(tj, i));
  topics[n] = NULL;
  char full[PATH_MAX];
  *st = PA_ERR_INVALID_MESSAGE;
  if (pa_core_data_path(g, path, false, full, sizeof full, err, err_sz) != 0)
    return NULL;
  *st = PA_ERR_BUSY;
  if (pa_fox_record_start(g->fox, full, n ? topics : NULL, seconds, err,
                          err_sz) != 0)
    return NULL;
  pa_info("recording MCAP to %s", full);
  return json_pack("{s:s, s:f}", "path", full, "seconds", seconds);
}

static json_t *fox_service(pa_netgw *g, const char *op, json_t *args,
                           pa_status *st, char *err, size_t err_sz) {
  *st = PA_ERR_INVALID_MESSAGE;
  if (!g->fox) {
    snprintf(err, err_sz, "the Foxglove front-end is not running");
    return NULL;
  }
  if (!strcmp(op, "info"))
    return info_json(g->fox);
  if (!strcmp(op, "record_start"))
    return record_start(g, args, st, err, err_sz);
  if (!strcmp(op, "record_stop")) {
    pa_mcap_stats ms;
    char path[PATH_MAX];
    if (pa_fox_record_stop(g->fox, &ms, path, sizeof path, err, err_sz) != 0)
      return NULL;
    json_t *d = stats_json(&ms);
    json_object_set_new(d, "path", json_string(path));
    return d;
  }
  if (!strcmp(op, "replay_start")) {
    /* loads off the loop: client gets request req's reply when it is in */
    const char *path = json_string_value(json_object_get(args, "path"));
    uint64_t client =
        (uint64_t)json_integer_value(json_object_get(args, "client"));
    uint64_t req = (uint64_t)json_integer_value(json_object_get(args, "req"));
    char full[PATH_MAX];
    if (!path ||
        pa_core_data_path(g, path, true, full, sizeof full, err, err_sz) != 0 ||
        pa_fox_replay_start(g->fox, full, client, req, err, err_sz) != 0)
      return NULL;
    return json_pack("{s:s}", "path", full);
  }
  snprintf(err, err_sz, "foxglove: no service '%s'", op);
  return NULL;
}

static void fox_metrics(pa_netgw *g, struct evbuffer *b) {
  if (!g->fox)
    return;
  pa_fox_info i;
  pa_fox_get_info(g->fox, &i);
  pa_metrics_family(b, "playarea_foxglove_clients", "gauge",
                    "Foxglove WebSocket clients connected");
  evbuffer_add_printf(b, "playarea_foxglove_clients %u\n", i.clients);
  pa_metrics_family(b, "playarea_foxglove_messages_total", "counter",
                    "Foxglove messages sent to clients, and dropped because "
                    "a client did not read them");
  evbuffer_add_printf(b,
                      "playarea_foxglove_messages_total{outcome=\"sent\"} "
                      "%llu\nplayarea_foxglove_messages_total{outcome="
                      "\"dropped\"} %llu\n",
                      (unsigned long long)i.sent,
                      (unsigned long long)i.dropped);
  pa_metrics_family(b, "playarea_foxglove_refused_total", "counter",
                    "Foxglove upgrades refused for want of the --token");
  evbuffer_add_printf(b, "playarea_foxglove_refused_total %llu\n",
                      (unsigned long long)g->fox->refused_auth);
  /* the recording's state, so that a full disk alerts */
  int st = !i.recording ? 0 : i.record_error[0] ? 2 : 1;
  static const char *const names[] = {"idle", "recording", "error"};
  pa_metrics_family(b, "playarea_netgw_mcap_recording", "gauge",
                    "the MCAP recording's state (error: its writer failed, "
                    "e.g. disk full)");
  for (int k = 0; k < 3; k++)
    evbuffer_add_printf(b, "playarea_netgw_mcap_recording{state=\"%s\"} %d\n",
                        names[k], st == k);
  pa_metrics_family(b, "playarea_netgw_mcap_dropped_total", "counter",
                    "messages the recording lost (a full queue, a failed "
                    "writer)");
  evbuffer_add_printf(b, "playarea_netgw_mcap_dropped_total %llu\n",
                      (unsigned long long)i.rec.dropped);
  pa_metrics_family(b, "playarea_mcap_messages_total", "counter",
                    "messages written to the running MCAP recording, and "
                    "dropped");
  evbuffer_add_printf(b,
                      "playarea_mcap_messages_total{outcome=\"written\"} "
                      "%llu\nplayarea_mcap_messages_total{outcome="
                      "\"dropped\"} %llu\n",
                      (unsigned long long)i.rec.messages,
                      (unsigned long long)i.rec.dropped);
}

static const pa_fe_listener fox_listeners[] = {
    {"foxglove", PA_PORT_TCP, "--foxglove_port",
     offsetof(pa_netgw_def, foxglove_port), true, true, 64},
};

const pa_frontend pa_fe_foxglove = {
    .name = "foxglove",
    .flags = "foxglove_port foxglove_encoding record",
    .listeners = fox_listeners,
    .n_listeners = 1,
    .token = true,
    .start = fox_start,
    .stop = fox_stop,
    .on_command = pa_fox_note_command,
    .call = fox_service,
    .metrics = fox_metrics,
};
