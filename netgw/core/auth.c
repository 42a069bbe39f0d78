/* auth.c - one auth policy for every front-end: with --token, no
 * connection of any front-end is served before it authenticates (text and
 * JSON `auth` lines; HTTP, /ws and Foxglove by ?token=, an Authorization:
 * Bearer header or the pa_token cookie). docs/operations.md, "Token". */
#define _GNU_SOURCE
#include "netgw_int.h"
#include "ws.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static int hexval(int c) {
  return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

bool pa_core_query(const char *query, const char *key, char *out,
                   size_t out_sz) {
  size_t kl = strlen(key);
  for (const char *p = query; p && *p;) {
    const char *amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
      size_t o = 0;
      for (size_t i = kl + 1; i < len && o + 1 < out_sz; i++) {
        int hi, lo;
        if (p[i] == '%' && i + 2 < len && (hi = hexval(p[i + 1])) >= 0 &&
            (lo = hexval(p[i + 2])) >= 0) {
          out[o++] = (char)(hi * 16 + lo);
          i += 2;
        } else {
          out[o++] = p[i] == '+' ? ' ' : p[i];
        }
      }
      out[o] = '\0';
      return true;
    }
    p = amp ? amp + 1 : NULL;
  }
  return false;
}

bool pa_core_token_ok(pa_netgw *g, const char *query, const char *auth,
                      const char *cookie) {
  if (!g->token[0])
    return true;
  char t[PA_NETGW_TOKEN_MAX + 1];
  if (query && pa_core_query(query, "token", t, sizeof t) &&
      pa_gw_token_ok(g, t))
    return true;
  if (auth && !strncasecmp(auth, "Bearer ", 7)) {
    snprintf(t, sizeof t, "%s", auth + 7);
    if (pa_gw_token_ok(g, t))
      return true;
  }
  for (const char *c = cookie; c && (c = strstr(c, "pa_token=")); c += 9) {
    if (c != cookie && c[-1] != ' ' && c[-1] != ';')
      continue;
    size_t n = strcspn(c + 9, "; ");
    if (n < sizeof t) {
      memcpy(t, c + 9, n);
      t[n] = '\0';
      if (pa_gw_token_ok(g, t))
        return true;
    }
  }
  return false;
}

bool pa_core_head_authed(pa_netgw *g, const char *head, size_t len) {
  if (!g->token[0])
    return true;
  char query[PA_NETGW_TOKEN_MAX + 64] = "", auth[PA_NETGW_TOKEN_MAX + 16],
                                  cookie[1024];
  /* the query of the request line: "GET /path?query HTTP/1.1" */
  const char *sp = memchr(head, ' ', len);
  const char *sp2 =
      sp ? memchr(sp + 1, ' ', len - (size_t)(sp + 1 - head)) : NULL;
  const char *q = sp2 ? memchr(sp + 1, '?', (size_t)(sp2 - sp - 1)) : NULL;
  if (q)
    snprintf(query, sizeof query, "%.*s", (int)(sp2 - q - 1), q + 1);
  bool has_auth =
      pa_ws_header(head, len, "Authorization", auth, sizeof auth) >= 0;
  bool has_cookie =
      pa_ws_header(head, len, "Cookie", cookie, sizeof cookie) >= 0;
  return pa_core_token_ok(g, query, has_auth ? auth : NULL,
                          has_cookie ? cookie : NULL);
}

void pa_core_refuse_http(int fd, const char *status, const char *text) {
  char buf[512];
  int n = snprintf(buf, sizeof buf,
                   "HTTP/1.1 %s\r\nContent-Type: text/plain\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                   status, strlen(text), text);
  if (n > 0) {
    ssize_t w = send(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
  }
  close(fd);
}
