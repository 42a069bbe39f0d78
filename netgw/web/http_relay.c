/* http_relay.c - plain HTTP connections relayed, bytes as they are, to the
 * gateway's evhttp server, with the core's limits on the way (issue 32):
 * each request head is read and checked before its body passes (a body no
 * handler takes, a cross-origin state change, an upload without the token
 * or past its size is answered at once and the connection closed, never
 * read), and each direction stops reading while the other side's output is
 * full (le-proxy's watermarks), so a client that pipelines and never reads
 * holds at most RELAY_HIGH bytes per direction. A client that half-closes
 * after its requests still gets every answer: the relay counts requests
 * passed and answers relayed and ends the connection after the last. */
#define _GNU_SOURCE
#include "web_int.h"

#include "pa_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>

#include "ws.h"

#define RELAY_HIGH (256u << 10) /* [bytes] stop reading the other side */
#define RELAY_LOW (64u << 10)   /* [bytes] ... resume below this */
#define LINGER_S 2 /* [s] a refused connection's unread bytes are drained */

typedef struct pa_relay {
  struct pa_relay *next, **prev;
  pa_web *w;
  struct bufferevent *a, *b; /* the browser, evhttp */
  struct sockaddr_in peer;
  bool closing;        /* one side ended: flush the other, then free */
  bool refused;        /* answered here: the rest of a's input is dropped */
  bool shut;           /* refused, answer sent: waiting for a's end */
  bool held_a, held_b; /* not read: the other side's output is full */
  bool a_eof;          /* the browser half-closed: its answers still go */
  bool uncounted;      /* answers not counted: evhttp's end ends it */
  bool b_shut;         /* ... and evhttp was told of the half-close */
  int64_t refused_ns;  /* when it was refused: drained LINGER_S at most */
  uint64_t body_left;  /* [bytes] of the current request's body to pass */
  /* requests passed and answers relayed whole: a half-closed browser's
   * connection ends once they are equal (issue 32) */
  uint64_t asked, answered;
  uint64_t head_ring; /* bit asked % 64: a HEAD request (no body back) */
  uint64_t resp_left; /* [bytes] of the current answer's body to relay */
  bool in_body;       /* an answer's head is out, its body is not */
} pa_relay;

static void relay_free(pa_relay *r) {
  *r->prev = r->next;
  if (r->next)
    r->next->prev = r->prev;
  bufferevent_free(r->a);
  bufferevent_free(r->b);
  free(r);
}

void pa_web_relay_free_all(pa_web *w) {
  while (w->relays)
    relay_free(w->relays);
}

uint32_t pa_web_relay_count(const pa_web *w, uint32_t addr) {
  uint32_t n = 0;
  for (const pa_relay *r = w->relays; r; r = r->next)
    n += r->peer.sin_addr.s_addr == addr;
  return n;
}

/* ---- the gate: one request head at a time
 * ----------------------------------*/

/* Header name's value in head (len bytes) into out; false when absent. */
static bool header(const char *head, size_t len, const char *name, char *out,
                   size_t n) {
  return pa_ws_header(head, len, name, out, n) >= 0;
}

/* Answers code at once and ends the connection without reading on. */
static void refuse(pa_relay *r, int code, const char *why, const char *text) {
  char buf[768];
  int n = snprintf(buf, sizeof buf,
                   "HTTP/1.1 %d %s\r\nContent-Type: text/plain; "
                   "charset=utf-8\r\nContent-Length: %zu\r\nConnection: "
                   "close\r\n\r\n%s\n",
                   code, why, strlen(text) + 1, text);
  if (n > 0)
    bufferevent_write(r->a, buf,
                      (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
  r->refused = true;
  r->refused_ns = pa_now_ns();
  bufferevent_enable(r->a, EV_READ); /* drained until its end */
  r->w->http_refused++;
  struct evbuffer *in = bufferevent_get_input(r->a);
  evbuffer_drain(in, evbuffer_get_length(in));
  /* evhttp gets nothing more; what it owes still goes out */
  struct timeval tv = {LINGER_S, 0};
  bufferevent_set_timeouts(r->a, &tv, NULL);
}

/* Checks one request head before its body is read: 0 with the body's
 * length in *body, or -1 when it was refused. */
static int gate(pa_relay *r, const char *head, size_t len, uint64_t *body) {
  pa_netgw *g = r->w->g;
  const char *sp = memchr(head, ' ', len);
  const char *sp2 =
      sp ? memchr(sp + 1, ' ', len - (size_t)(sp + 1 - head)) : NULL;
  if (!sp || !sp2) {
    refuse(r, 400, "Bad Request", "malformed request line");
    return -1;
  }
  char method[16], target[1024], v[512];
  size_t ml = (size_t)(sp - head), tl = (size_t)(sp2 - sp - 1);
  if (ml >= sizeof method || tl >= sizeof target) {
    refuse(r, 414, "URI Too Long", "request line too long");
    return -1;
  }
  memcpy(method, head, ml);
  method[ml] = '\0';
  memcpy(target, sp + 1, tl);
  target[tl] = '\0';
  char *q = strchr(target, '?');
  if (q)
    *q++ = '\0';
  bool safe = !strcmp(method, "GET") || !strcmp(method, "HEAD") ||
              !strcmp(method, "OPTIONS");
  uint64_t cl = 0;
  if (header(head, len, "Transfer-Encoding", v, sizeof v) &&
      strcasecmp(v, "identity") != 0) {
    pa_lim_count(g, PA_LIM_BODY);
    refuse(r, 411, "Length Required",
           "send the body with a Content-Length (no chunked uploads)");
    return -1;
  }
  if (header(head, len, "Content-Length", v, sizeof v)) {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || *end || errno) {
      refuse(r, 400, "Bad Request", "Content-Length is not a number");
      return -1;
    }
    cl = x;
  }
  char origin[256] = "", host[256] = "";
  bool has_origin = header(head, len, "Origin", origin, sizeof origin);
  header(head, len, "Host", host, sizeof host);
  if (!safe && !pa_lim_origin_ok(g, has_origin ? origin : NULL, host)) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "cross-origin request refused: Origin %.100s is not this "
             "gateway's (Host %.100s); start pa-netgw with --allow_origin "
             "%.100s to allow it",
             origin, host, origin);
    refuse(r, 403, "Forbidden", msg);
    return -1;
  }
  if (cl == 0 && safe) {
    *body = 0;
    return 0;
  }
  /* A body: only an upload takes one, and only when it may write it. */
  bool upload = !strcmp(target, "/api/upload");
  char auth[PA_NETGW_TOKEN_MAX + 16] = "", cookie[1024] = "";
  bool has_auth = header(head, len, "Authorization", auth, sizeof auth);
  bool has_cookie = header(head, len, "Cookie", cookie, sizeof cookie);
  const char *why = NULL;
  int code = 0;
  if (!upload && cl > 0) {
    code = safe ? 413 : 405;
    why = safe ? "this request takes no body"
               : "only POST /api/upload takes a body";
  } else if (upload && strcmp(method, "POST") != 0) {
    code = 405, why = "upload with POST";
  } else if (upload && !r->w->upload[0]) {
    code = 403, why = "uploads are off: start pa-netgw with --upload_dir";
  } else if (upload && !pa_core_token_ok(g, q, has_auth ? auth : NULL,
                                         has_cookie ? cookie : NULL)) {
    code = 401, why = "not_authorized: this gateway has a --token";
  } else if (upload && cl > PA_WEB_UPLOAD_MAX) {
    code = 413, why = "an upload is at most 32 MiB";
  }
  if (code) {
    pa_lim_count(g, PA_LIM_BODY);
    refuse(r, code,
           code == 401   ? "Unauthorized"
           : code == 403 ? "Forbidden"
           : code == 405 ? "Method Not Allowed"
                         : "Payload Too Large",
           why);
    return -1;
  }
  *body = cl;
  return 0;
}

/* Passes the browser's bytes to evhttp: heads checked, bodies counted. */
static void from_browser(pa_relay *r) {
  struct evbuffer *in = bufferevent_get_input(r->a);
  struct evbuffer *out = bufferevent_get_output(r->b);
  while (!r->refused && evbuffer_get_length(in) > 0) {
    if (evbuffer_get_length(out) > RELAY_HIGH) {
      r->held_a = true; /* evhttp is behind: stop reading the browser */
      bufferevent_disable(r->a, EV_READ);
      return;
    }
    size_t avail = evbuffer_get_length(in);
    if (r->body_left) {
      size_t n = avail < r->body_left ? avail : (size_t)r->body_left;
      evbuffer_remove_buffer(in, out, n);
      r->body_left -= n;
      continue;
    }
    unsigned char c0;
    if (evbuffer_copyout(in, &c0, 1) == 1 && (c0 == '\r' || c0 == '\n')) {
      evbuffer_remove_buffer(in, out, 1); /* blank lines between requests */
      continue;
    }
    struct evbuffer_ptr p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (p.pos < 0 || (size_t)p.pos + 4 > PA_WS_MAX_HEAD) {
      if (p.pos >= 0 || avail > PA_WS_MAX_HEAD)
        refuse(r, 431, "Request Header Fields Too Large",
               "request head too long");
      return; /* the rest of the head follows */
    }
    size_t hl = (size_t)p.pos + 4;
    const char *head = (const char *)evbuffer_pullup(in, (ev_ssize_t)hl);
    uint64_t body = 0;
    if (!head || gate(r, head, hl, &body) != 0)
      return;
    if (r->asked - r->answered >= 64)
      r->uncounted = true; /* deep pipelines: ended by evhttp instead */
    uint64_t bit = 1ull << (r->asked % 64);
    r->head_ring =
        !memcmp(head, "HEAD ", 5) ? r->head_ring | bit : r->head_ring & ~bit;
    r->asked++;
    evbuffer_remove_buffer(in, out, hl);
    r->body_left = body;
  }
  if (r->refused) {
    evbuffer_drain(in, evbuffer_get_length(in));
  }
}

/* Passes evhttp's answers to the browser, counting the whole ones (by
 * their Content-Length: evhttp sends no chunked answers here; an answer
 * without one, to an HTTP/1.0 request, ends with evhttp's close). */
static void to_browser(pa_relay *r, struct evbuffer *in, struct evbuffer *out) {
  while (!r->uncounted && evbuffer_get_length(in) > 0) {
    if (r->in_body) {
      size_t n = evbuffer_get_length(in);
      n = n < r->resp_left ? n : (size_t)r->resp_left;
      evbuffer_remove_buffer(in, out, n);
      r->resp_left -= n;
      r->in_body = r->resp_left > 0;
      r->answered += !r->in_body;
      continue;
    }
    struct evbuffer_ptr p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (p.pos < 0) {
      if (evbuffer_get_length(in) > PA_WS_MAX_HEAD)
        r->uncounted = true; /* not an answer head of evhttp's */
      return;                /* the rest of the head follows */
    }
    size_t hl = (size_t)p.pos + 4;
    const char *head = (const char *)evbuffer_pullup(in, (ev_ssize_t)hl);
    char v[64];
    unsigned long long cl = 0;
    bool has_cl =
        head && pa_ws_header(head, hl, "Content-Length", v, sizeof v) >= 0;
    if (has_cl)
      cl = strtoull(v, NULL, 10);
    bool interim = head && hl > 9 && head[9] == '1'; /* 100 Continue */
    if (!head || (!interim && strncmp(head, "HTTP/1.", 7) != 0)) {
      r->uncounted = true;
      break;
    }
    evbuffer_remove_buffer(in, out, hl);
    if (interim)
      continue;
    bool head_req = r->head_ring >> (r->answered % 64) & 1;
    bool no_body = head_req || (hl > 12 && (!strncmp(head + 9, "204", 3) ||
                                            !strncmp(head + 9, "304", 3)));
    if (!has_cl && !no_body) {
      /* an HTTP/1.0 answer: its body ends where evhttp closes */
      r->uncounted = true;
      break;
    }
    r->resp_left = head_req ? 0 : cl;
    r->in_body = r->resp_left > 0;
    r->answered += !r->in_body;
  }
  evbuffer_add_buffer(out, in); /* uncounted: as they are */
}

/* A browser that half-closed: once its requests are all with evhttp, the
 * connection ends after the last answer (counted), or evhttp is told and
 * its end ends it (uncounted, or a body left unfinished). Never frees. */
static void half_closed(pa_relay *r) {
  if (!r->a_eof || r->closing || r->held_a ||
      evbuffer_get_length(bufferevent_get_output(r->b)))
    return;
  struct evbuffer *in = bufferevent_get_input(r->a);
  evbuffer_drain(in, evbuffer_get_length(in)); /* a head left unfinished */
  if (!r->uncounted && r->answered >= r->asked && !r->body_left) {
    r->closing = true; /* freed once the answers are out */
    bufferevent_disable(r->b, EV_READ);
  } else if ((r->uncounted || r->body_left) && !r->b_shut) {
    r->b_shut = true;
    shutdown(bufferevent_getfd(r->b), SHUT_WR);
  }
}

static void relay_read(struct bufferevent *bev, void *arg) {
  pa_relay *r = arg;
  if (bev == r->a && r->refused &&
      pa_now_ns() - r->refused_ns > (int64_t)LINGER_S * 1000000000) {
    relay_free(r); /* it keeps sending what nobody reads: enough */
    return;
  }
  if (bev == r->a) {
    from_browser(r);
    return;
  }
  if (r->refused) { /* evhttp's answers come after ours: dropped */
    evbuffer_drain(bufferevent_get_input(bev),
                   evbuffer_get_length(bufferevent_get_input(bev)));
    return;
  }
  struct evbuffer *out = bufferevent_get_output(r->a);
  to_browser(r, bufferevent_get_input(bev), out);
  if (evbuffer_get_length(out) > RELAY_HIGH && !r->held_b) {
    r->held_b = true; /* the browser does not read: evhttp waits */
    pa_lim_count(r->w->g, PA_LIM_PAUSED);
    bufferevent_disable(r->b, EV_READ);
  }
  half_closed(r); /* maybe the last answer: ended once it is out */
}

static void relay_write(struct bufferevent *bev, void *arg) {
  pa_relay *r = arg;
  size_t out_a = evbuffer_get_length(bufferevent_get_output(r->a));
  size_t out_b = evbuffer_get_length(bufferevent_get_output(r->b));
  if (r->refused) {
    if (bev == r->a && out_a == 0 && !r->shut) {
      /* the answer is out: end our side, drain theirs until EOF */
      r->shut = true;
      shutdown(bufferevent_getfd(r->a), SHUT_WR);
    }
    return;
  }
  half_closed(r);
  if (r->closing && !out_a && !out_b) {
    relay_free(r);
    return;
  }
  if (bev == r->a && r->held_b && out_a <= RELAY_LOW) {
    r->held_b = false;
    if (!r->closing)
      bufferevent_enable(r->b, EV_READ);
    relay_read(r->b, r);
  } else if (bev == r->b && r->held_a && out_b <= RELAY_LOW) {
    r->held_a = false;
    if (!r->closing && !r->a_eof)
      bufferevent_enable(r->a, EV_READ);
    from_browser(r);
  }
}

static void relay_event(struct bufferevent *bev, short what, void *arg) {
  pa_relay *r = arg;
  if (what & BEV_EVENT_CONNECTED)
    return;
  if (r->refused) {
    if (bev == r->a)
      relay_free(r); /* its end, a reset or the linger time */
    else
      bufferevent_disable(bev, EV_READ | EV_WRITE);
    return;
  }
  if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
    relay_free(r); /* a reset, or evhttp unreachable: nothing to flush */
    return;
  }
  if (what & BEV_EVENT_EOF)
    relay_read(bev, r); /* the last bytes */
  if (bev == r->a && (what & BEV_EVENT_EOF) && !r->a_eof) {
    /* a half-close (shutdown(SHUT_WR)) after a request: its answer is
     * still owed, so the relay goes on until evhttp ends (issue 32) */
    r->a_eof = true;
    bufferevent_disable(bev, EV_READ);
    relay_write(r->b, r);
    return;
  }
  r->closing = true;
  bufferevent_disable(bev, EV_READ);
  relay_write(bev, r); /* free once the other side's output is out */
}

void pa_web_relay_start(pa_web *w, evutil_socket_t fd,
                        const struct sockaddr_in *peer) {
  pa_relay *r = calloc(1, sizeof *r);
  if (r) {
    r->w = w;
    r->peer = *peer;
    r->a = bufferevent_socket_new(w->g->base, fd, BEV_OPT_CLOSE_ON_FREE);
    r->b = bufferevent_socket_new(w->g->base, -1, BEV_OPT_CLOSE_ON_FREE);
  }
  if (!r || !r->a || !r->b ||
      bufferevent_socket_connect(r->b, (struct sockaddr *)&w->inner,
                                 sizeof w->inner) != 0) {
    if (r && r->a)
      bufferevent_free(r->a);
    else
      evutil_closesocket(fd);
    if (r && r->b)
      bufferevent_free(r->b);
    free(r);
    return;
  }
  r->next = w->relays;
  r->prev = &w->relays;
  if (w->relays)
    w->relays->prev = &r->next;
  w->relays = r;
  bufferevent_setcb(r->a, relay_read, relay_write, relay_event, r);
  bufferevent_setcb(r->b, relay_read, relay_write, relay_event, r);
  /* the write callbacks at the low-water mark resume a held side */
  bufferevent_setwatermark(r->a, EV_WRITE, RELAY_LOW, 0);
  bufferevent_setwatermark(r->b, EV_WRITE, RELAY_LOW, 0);
  bufferevent_enable(r->a, EV_READ | EV_WRITE);
  bufferevent_enable(r->b, EV_READ | EV_WRITE);
}
