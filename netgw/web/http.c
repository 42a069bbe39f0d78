/* http.c - the gateway's browser side: one listener on --http_port whose
 * connections are sorted by their request line. A WebSocket upgrade of /ws
 * goes to web_ws.c (libevent 2.1's evhttp cannot hand a connection over
 * after an upgrade); everything else is relayed, bytes as they are, to an
 * evhttp server on a loopback port of its own (2.1 exports no way to give
 * evhttp an accepted socket), which serves the pages in web/, /metrics and
 * the editor's uploads. The request line is only peeked (MSG_PEEK), so the
 * relay passes the request whole. */
#define _GNU_SOURCE
#include "web_int.h"

#include "pa_safefile.h"
#include "pa_util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "ws.h"

#ifndef PA_WEB_DIR
#define PA_WEB_DIR ""
#endif

#define PEEK_TIMEOUT_MS 10000 /* a request head must arrive within this */
#define PEEK_RETRY_US 5000    /* poll again when the request line is partial */
#define LIVE_PERIOD_US 50000  /* 20 Hz */

/* A connection whose request head is being read. */
typedef struct pa_peek {
  struct pa_peek *next;
  pa_web *w;
  evutil_socket_t fd;
  struct sockaddr_in peer;
  struct event *ev; /* readable, or the retry timer */
  bool consuming;   /* a /ws request: the head is read for real into buf */
  size_t n;
  int64_t start_ns;
  char buf[PA_WS_MAX_HEAD + 1];
} pa_peek;

/* ---- evhttp: pages, /metrics, uploads
 * ---------------------------------------*/

void pa_web_reply_text(struct evhttp_request *req, int code, const char *why,
                       const char *text) {
  struct evbuffer *b = evbuffer_new();
  if (b)
    evbuffer_add_printf(b, "%s\n", text);
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                    "text/plain; charset=utf-8");
  evhttp_send_reply(req, code, why, b);
  if (b)
    evbuffer_free(b);
}

static const char *content_type(const char *path) {
  static const char *const map[][2] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".png", "image/png"},
      {".svg", "image/svg+xml"},
      {".yaml", "text/yaml; charset=utf-8"},
      {".pgm", "image/x-portable-graymap"},
      {".ico", "image/x-icon"},
  };
  const char *dot = strrchr(path, '.');
  for (size_t i = 0; dot && i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(dot, map[i][0]))
      return map[i][1];
  return "application/octet-stream";
}

/* A file of web/ named by a URL path; refuses anything outside web/. */
static void serve_file(pa_web *w, struct evhttp_request *req,
                       const char *path) {
  if (!strcmp(path, "/"))
    path = "/index.html";
  else if (!strcmp(path, "/editor"))
    path = "/editor.html";
  char rel[512];
  size_t n = strlen(path);
  bool ok =
      n > 1 && n < sizeof rel && !strstr(path, "..") && !strstr(path, "//");
  for (size_t i = 0; ok && i < n; i++)
    ok = isalnum((unsigned char)path[i]) || strchr("/._-", path[i]);
  if (!ok) {
    pa_web_reply_text(req, 404, "Not Found", "no such page");
    return;
  }
  snprintf(rel, sizeof rel, "%s", path + 1);
  char full[PATH_MAX + 600], real[PATH_MAX];
  snprintf(full, sizeof full, "%s/%s", w->dir, rel);
  size_t dl = strlen(w->dir);
  struct stat st;
  int fd = -1;
  /* realpath again: a symlink inside web/ must not lead out of it */
  if (!realpath(full, real) || strncmp(real, w->dir, dl) || real[dl] != '/' ||
      (fd = open(real, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0 ||
      !S_ISREG(st.st_mode)) {
    if (fd >= 0)
      close(fd);
    pa_web_reply_text(req, 404, "Not Found", "no such page");
    return;
  }
  struct evbuffer *b = evbuffer_new();
  if (!b || evbuffer_add_file(b, fd, 0, st.st_size) != 0) {
    if (b)
      evbuffer_free(b);
    else
      close(fd);
    pa_web_reply_text(req, 500, "Internal Server Error",
                      "cannot read the file");
    return;
  }
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", content_type(real));
  evhttp_add_header(h, "Cache-Control", "no-cache");
  evhttp_send_reply(req, 200, "OK", b);
  evbuffer_free(b);
}

/* POST /api/upload?name=F: the editor's map or world, written into
 * --upload_dir (so that pa-sim's set_map / set_scenario can read it). */
static void upload(pa_web *w, struct evhttp_request *req, const char *query) {
  char name[128], msg[2 * PATH_MAX + 300];
  if (!w->upload[0]) {
    pa_web_reply_text(req, 403, "Forbidden",
                      "uploads are off: start pa-netgw with --upload_dir");
    return;
  }
  if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
    pa_web_reply_text(req, 405, "Method Not Allowed", "upload with POST");
    return;
  }
  bool ok = pa_core_query(query, "name", name, sizeof name) && name[0] &&
            name[0] != '.';
  for (size_t i = 0; ok && name[i]; i++)
    ok = isalnum((unsigned char)name[i]) || strchr("._-", name[i]);
  const char *dot = ok ? strrchr(name, '.') : NULL;
  if (!dot ||
      (strcmp(dot, ".png") && strcmp(dot, ".pgm") && strcmp(dot, ".yaml"))) {
    pa_web_reply_text(
        req, 400, "Bad Request",
        "name: letters, digits, . _ - ending .png, .pgm or .yaml");
    return;
  }
  struct evbuffer *in = evhttp_request_get_input_buffer(req);
  size_t len = evbuffer_get_length(in);
  if (len > PA_WEB_UPLOAD_MAX) {
    pa_web_reply_text(req, 413, "Payload Too Large", "at most 32 MiB");
    return;
  }
  char path[PATH_MAX + 200], err[400];
  snprintf(path, sizeof path, "%s/%s", w->upload, name);
  /* a temp file made O_EXCL|O_NOFOLLOW beside it, renamed over it: a
   * symlink planted in --upload_dir is replaced, never written through */
  pa_safe_file f = {.fd = -1, .dirfd = -1};
  int root = pa_safe_root_open(w->upload, err, sizeof err);
  int rc = root < 0 ? PA_SAFE_IO
                    : pa_safe_begin(&f, root, NULL, name, PA_SAFE_OVERWRITE,
                                    err, sizeof err);
  if (root >= 0)
    close(root);
  bool wrote = rc == PA_SAFE_OK;
  while (wrote && evbuffer_get_length(in) > 0)
    wrote = evbuffer_write(in, f.fd) > 0;
  if (rc == PA_SAFE_OK && !wrote) {
    rc = pa_safe_io_error(&f, errno ? errno : EIO, err, sizeof err);
    pa_safe_abort(&f);
  } else if (rc == PA_SAFE_OK) {
    rc = pa_safe_commit(&f, err, sizeof err);
  }
  if (rc != PA_SAFE_OK) {
    snprintf(msg, sizeof msg, "upload %s: %s", name, err);
    pa_web_reply_text(req, 500, "Internal Server Error", msg);
    return;
  }
  struct evbuffer *b = evbuffer_new();
  if (b) {
    json_t *o = json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)len);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s)
      evbuffer_add(b, s, strlen(s));
    free(s);
    json_decref(o);
  }
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                    "application/json");
  evhttp_send_reply(req, 200, "OK", b);
  if (b)
    evbuffer_free(b);
}

static void on_request(struct evhttp_request *req, void *arg) {
  pa_web *w = arg;
  w->http_requests++;
  const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
  const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
  const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
  struct evkeyvalq *ih = evhttp_request_get_input_headers(req);
  if (!path || !*path)
    path = "/";
  if (!pa_core_token_ok(w->g, query, evhttp_find_header(ih, "Authorization"),
                        evhttp_find_header(ih, "Cookie"))) {
    w->http_refused++;
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "WWW-Authenticate", "Bearer");
    pa_web_reply_text(
        req, 401, "Unauthorized",
        "not_authorized: this gateway has a --token: add ?token=... "
        "or an Authorization: Bearer header");
    return;
  }
  char t[PA_NETGW_TOKEN_MAX + 1];
  if (w->g->token[0] && query && pa_core_query(query, "token", t, sizeof t) &&
      pa_gw_token_ok(w->g, t)) {
    /* The page's modules and /ws carry no query: a cookie takes it along. */
    char cookie[PA_NETGW_TOKEN_MAX + 64];
    snprintf(cookie, sizeof cookie,
             "pa_token=%s; Path=/; HttpOnly; SameSite=Strict", t);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Set-Cookie",
                      cookie);
  }
  enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
  if (!strcmp(path, "/api/upload")) {
    upload(w, req, query);
    return;
  }
  if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
    pa_web_reply_text(req, 405, "Method Not Allowed", "GET only");
    return;
  }
  if (!strcmp(path, "/metrics")) {
    struct evbuffer *b = evbuffer_new();
    if (!b) {
      pa_web_reply_text(req, 500, "Internal Server Error", "out of memory");
      return;
    }
    pa_metrics_write(w, b);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
  } else if (!strcmp(path, "/api/camera")) {
    pa_webcam_request(w, req, query);
  } else if (!strcmp(path, "/api/status")) {
    char *s = pa_web_status_json(w->g);
    struct evbuffer *b = evbuffer_new();
    if (b && s)
      evbuffer_add(b, s, strlen(s));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "application/json");
    evhttp_send_reply(req, s ? 200 : 500, s ? "OK" : "Error", b);
    if (b)
      evbuffer_free(b);
    free(s);
  } else if (!strcmp(path, "/ws")) {
    pa_web_reply_text(req, 400, "Bad Request", "/ws takes a WebSocket upgrade");
  } else {
    serve_file(w, req, path);
  }
}

/* ---- the listener: sort connections by their request head
 * -------------------*/

static void peek_free(pa_peek *p, bool close_fd) {
  pa_peek **pp = &p->w->peeks;
  while (*pp && *pp != p)
    pp = &(*pp)->next;
  if (*pp)
    *pp = p->next;
  if (p->ev)
    event_free(p->ev);
  if (close_fd)
    evutil_closesocket(p->fd);
  free(p);
}

static void on_peek(evutil_socket_t fd, short what, void *arg);

/* Waits for more of the head: readable (consuming) or a short poll (peeking:
 * the peeked bytes keep the socket readable). */
static void peek_rearm(pa_peek *p) {
  event_free(p->ev);
  if (p->consuming) {
    p->ev = event_new(p->w->g->base, p->fd, EV_READ, on_peek, p);
    struct timeval tv = {PEEK_TIMEOUT_MS / 1000, 0};
    if (p->ev)
      event_add(p->ev, &tv);
  } else {
    p->ev = evtimer_new(p->w->g->base, on_peek, p);
    struct timeval tv = {0, PEEK_RETRY_US};
    if (p->ev)
      evtimer_add(p->ev, &tv);
  }
  if (!p->ev)
    peek_free(p, true);
}

pa_http_route pa_http_route_head(const char *buf, size_t n, bool with_head,
                                 size_t *head_len) {
  if (!memchr(buf, '\n', n))
    return n >= PA_WS_MAX_HEAD ? PA_HTTP_DROP : PA_HTTP_MORE;
  /* "GET /ws" or "GET /ws?..." goes to the WebSocket side. */
  bool ws =
      n >= 8 && (!memcmp(buf, "GET /ws ", 8) || !memcmp(buf, "GET /ws?", 8));
  if (!ws)
    return PA_HTTP_RELAY;
  if (!with_head)
    return PA_HTTP_WS;
  const char *end = memmem(buf, n, "\r\n\r\n", 4);
  if (!end)
    return n >= PA_WS_MAX_HEAD ? PA_HTTP_DROP : PA_HTTP_MORE;
  *head_len = (size_t)(end + 4 - buf);
  return memchr(buf, '\0', *head_len) ? PA_HTTP_DROP : PA_HTTP_WS;
}

static void on_peek(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  pa_peek *p = arg;
  pa_web *w = p->w;
  if ((what & EV_TIMEOUT && p->consuming) ||
      pa_now_ns() - p->start_ns > (int64_t)PEEK_TIMEOUT_MS * 1000000) {
    pa_lim_count(w->g, PA_LIM_IDLE); /* shown as idle_timeout, as the core's */
    peek_free(p, true);              /* no request head in time */
    return;
  }
  ssize_t r = p->consuming
                  ? recv(p->fd, p->buf + p->n, PA_WS_MAX_HEAD - p->n, 0)
                  : recv(p->fd, p->buf, PA_WS_MAX_HEAD, MSG_PEEK);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
    peek_free(p, true);
    return;
  }
  if (r > 0)
    p->n = p->consuming ? p->n + (size_t)r : (size_t)r;
  p->buf[p->n] = '\0';
  size_t head_len = 0;
  switch (pa_http_route_head(p->buf, p->n, p->consuming, &head_len)) {
  case PA_HTTP_MORE:
    peek_rearm(p);
    return;
  case PA_HTTP_DROP:
    peek_free(p, true);
    return;
  case PA_HTTP_RELAY: {
    evutil_socket_t f = p->fd;
    struct sockaddr_in peer = p->peer;
    peek_free(p, false);
    pa_web_relay_start(w, f, &peer);
    return;
  }
  case PA_HTTP_WS:
    break;
  }
  if (!p->consuming) {
    /* Read what was peeked for real; the rest of the head follows. */
    p->consuming = true;
    p->n = 0;
    on_peek(fd, EV_READ, p);
    return;
  }
  evutil_socket_t f = p->fd;
  struct sockaddr_in peer = p->peer;
  /* pa_webws_accept takes the fd: detach it from the peek first */
  event_free(p->ev);
  p->ev = NULL;
  pa_webws_accept(w, f, &peer, p->buf, head_len,
                  (const uint8_t *)p->buf + head_len, p->n - head_len);
  peek_free(p, false);
}

/* The address holds --max_clients_per_peer HTTP connections already
 * (heads being read, relayed, /ws): counted, true. */
static bool peer_full(pa_web *w, uint32_t addr) {
  unsigned cap = w->g->def.max_clients_per_peer;
  if (!cap)
    return false;
  uint32_t n = pa_web_relay_count(w, addr) + pa_webws_count(w, addr);
  for (const pa_peek *p = w->peeks; p; p = p->next)
    n += p->peer.sin_addr.s_addr == addr;
  if (n < cap)
    return false;
  pa_lim_count(w->g, PA_LIM_PEER_CAP);
  return true;
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg) {
  (void)lis;
  pa_web *w = arg;
  pa_core_client_seen(w->g);
  pa_peek *p = calloc(1, sizeof *p);
  if (!p || sa->sa_family != AF_INET || salen < (int)sizeof p->peer) {
    free(p);
    evutil_closesocket(fd);
    return;
  }
  memcpy(&p->peer, sa, sizeof p->peer);
  if (peer_full(w, p->peer.sin_addr.s_addr)) {
    static const char resp[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
        "Content-Length: 39\r\nConnection: close\r\n\r\n"
        "too many connections from this address\n";
    ssize_t wr = send(fd, resp, sizeof resp - 1, MSG_NOSIGNAL);
    (void)wr;
    free(p);
    evutil_closesocket(fd);
    return;
  }
  p->w = w;
  p->fd = fd;
  p->start_ns = pa_now_ns();
  p->ev = event_new(w->g->base, fd, EV_READ, on_peek, p);
  struct timeval tv = {PEEK_TIMEOUT_MS / 1000, 0};
  if (!p->ev || event_add(p->ev, &tv) != 0) {
    if (p->ev)
      event_free(p->ev);
    free(p);
    evutil_closesocket(fd);
    return;
  }
  p->next = w->peeks;
  w->peeks = p;
}

static void on_accept_error(struct evconnlistener *lis, void *arg) {
  (void)lis, (void)arg;
  pa_warn("http accept: %s",
          evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

static void on_live(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_web *w = arg;
  int64_t t0 = pa_now_ns();
  w->live_n++;
  pa_metrics_sample(w);
  pa_webcam_tick(w);
  pa_webws_tick(w);
  pa_gw_account(w->g, t0);
}

/* web/: --web_dir, else next to the binary once installed, else the source
 * tree's (a build run in place). */
static int find_web_dir(pa_web *w, const char *flag, char *err, size_t err_sz) {
  char cand[3][PATH_MAX];
  int n = 0;
  if (flag && *flag) {
    snprintf(cand[n++], PATH_MAX, "%s", flag);
  } else {
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
      exe[l] = '\0';
      char *slash = strrchr(exe, '/');
      if (slash)
        *slash = '\0';
      snprintf(cand[n++], PATH_MAX, "%.*s/../share/playarea/web", PATH_MAX - 30,
               exe);
    }
    snprintf(cand[n++], PATH_MAX, "%s", PA_WEB_DIR);
  }
  for (int i = 0; i < n; i++) {
    char probe[4 * PATH_MAX];
    snprintf(probe, sizeof probe, "%s/index.html", cand[i]);
    if (cand[i][0] && access(probe, R_OK) == 0 && realpath(cand[i], w->dir))
      return 0;
  }
  snprintf(err, err_sz, "--web_dir: no index.html in %.200s", cand[0]);
  return -1;
}

int pa_web_start(pa_netgw *g, char *err, size_t err_sz) {
  const pa_netgw_def *d = &g->def;
  if (d->http_port == 0)
    return 0;
  pa_web *w = calloc(1, sizeof *w);
  if (!w) {
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  g->web = w;
  w->g = g;
  if (find_web_dir(w, d->web_dir, err, err_sz) != 0)
    return -1;
  if (d->upload_dir && *d->upload_dir && !realpath(d->upload_dir, w->upload)) {
    snprintf(err, err_sz, "--upload_dir %s: %s", d->upload_dir,
             strerror(errno));
    return -1;
  }
  if (pa_metrics_init(w) != 0 || pa_webcam_init(w) != 0) {
    snprintf(err, err_sz, "out of memory");
    return -1;
  }
  w->http = evhttp_new(g->base);
  w->live_ev = event_new(g->base, -1, EV_PERSIST, on_live, w);
  if (!w->http || !w->live_ev) {
    snprintf(err, err_sz, "evhttp setup failed");
    return -1;
  }
  evhttp_set_gencb(w->http, on_request, w);
  evhttp_set_allowed_methods(w->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
                                          EVHTTP_REQ_POST);
  evhttp_set_max_body_size(w->http, PA_WEB_UPLOAD_MAX + 1);
  evhttp_set_max_headers_size(w->http, PA_WS_MAX_HEAD);
  evhttp_set_timeout(w->http, 30);
  /* evhttp's own port: loopback, picked by the OS, reached by the relay */
  memset(&w->inner, 0, sizeof w->inner);
  w->inner.sin_family = AF_INET;
  w->inner.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct evhttp_bound_socket *hs =
      evhttp_bind_socket_with_handle(w->http, "127.0.0.1", 0);
  if (!hs) {
    snprintf(err, err_sz, "evhttp: cannot listen on a loopback port: %s",
             strerror(errno));
    return -1;
  }
  struct sockaddr_in ib;
  socklen_t ibl = sizeof ib;
  getsockname(evhttp_bound_socket_get_fd(hs), (struct sockaddr *)&ib, &ibl);
  w->inner.sin_port = ib.sin_port;
  /* The core binds it: a taken port walks on as --tcp_port does, and a
   * restarted pa-netgw gets the same port again. */
  const char *bind_addr = d->bind ? d->bind : "127.0.0.1";
  unsigned bound = 0;
  int lfd = pa_core_open(g, &pa_fe_web, 0, &bound, err, err_sz);
  if (lfd < 0)
    return lfd;
  w->lis =
      evconnlistener_new(g->base, on_accept, w,
                         LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, lfd);
  if (!w->lis) {
    close(lfd);
    snprintf(err, err_sz, "web: evconnlistener_new failed");
    return -1;
  }
  evconnlistener_set_error_cb(w->lis, on_accept_error);
  w->port = bound;
  struct timeval tv = {0, LIVE_PERIOD_US};
  event_add(w->live_ev, &tv);
  pa_info("web: http://%s:%u/ (viewer), /editor, /metrics, /ws; pages from %s",
          bind_addr, w->port, w->dir);
  return 0;
}

void pa_web_stop(pa_netgw *g) {
  pa_web *w = g->web;
  if (!w)
    return;
  pa_webws_free_all(w);
  while (w->peeks)
    peek_free(w->peeks, true);
  pa_web_relay_free_all(w);
  if (w->live_ev)
    event_free(w->live_ev);
  if (w->lis)
    evconnlistener_free(w->lis);
  if (w->http)
    evhttp_free(w->http);
  pa_metrics_free(w);
  pa_webcam_free(w);
  free(w->scan_seq);
  free(w);
  g->web = NULL;
}

/* ---- the front-end row --------------------------------------------------*/

/* A default port taken by another stack only warns: the stack runs
 * without pages (unless --http_port was given: http_required). A kept
 * port taken after a restart is fatal. */
static int web_start(pa_netgw *g, char *err, size_t err_sz) {
  char werr[512];
  int rc = pa_web_start(g, werr, sizeof werr);
  if (rc == 0)
    return 0;
  pa_web_stop(g);
  if (rc == PA_LISTEN_TAKEN || g->def.http_required ||
      strncmp(werr, "cannot listen", 13)) {
    snprintf(err, err_sz, "%s", werr);
    return -1;
  }
  pa_warn("%s: serving no web pages", werr);
  return 0;
}

static const pa_fe_listener web_listeners[] = {
    {"http", PA_PORT_TCP, "--http_port", offsetof(pa_netgw_def, http_port),
     true, true, 128},
};

const pa_frontend pa_fe_web = {
    .name = "web",
    .flags = "http_port web_dir upload_dir",
    .listeners = web_listeners,
    .n_listeners = 1,
    .token = true,
    .start = web_start,
    .stop = pa_web_stop,
};
