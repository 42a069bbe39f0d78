/* fuzz_http.c - libFuzzer target: the browser port's request handling
 * before anything is relayed (netgw/http.c). An input is the bytes a
 * client sends first: the routing decision (relay to evhttp, WebSocket,
 * wait, drop) as the peek sees them and as the consuming read sees them, the
 * /ws head's parse, and the token found in the request target's query, the
 * Authorization header and the Cookie header, as the relay's evhttp side
 * reads them. */
#define _GNU_SOURCE
#include "web_int.h"
#include "ws.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The value of header name in head[0..len), NUL-terminated into out. */
static const char *header(const char *head, size_t len, const char *name,
                          char *out, size_t out_sz) {
  return pa_ws_header(head, len, name, out, out_sz) >= 0 ? out : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > PA_WS_MAX_HEAD * 2)
    return 0;
  /* an exact-size copy, so ASan sees any read past it */
  char *buf = malloc(size ? size : 1);
  memcpy(buf, data, size);
  size_t head_len = 0;
  pa_http_route peek = pa_http_route_head(buf, size, false, &head_len);
  pa_http_route whole = pa_http_route_head(buf, size, true, &head_len);
  if (peek == PA_HTTP_RELAY && whole != PA_HTTP_RELAY)
    abort(); /* both reads must agree on the side */
  if (whole == PA_HTTP_WS) {
    if (head_len < 4 || head_len > size)
      abort();
    char path[256], err[160];
    pa_ws_parse_head(buf, head_len, path, sizeof path, err, sizeof err);
  }
  /* the request target's query and the token's three places */
  char *z = malloc(size + 1);
  memcpy(z, data, size);
  z[size] = 0;
  char *sp = memchr(z, ' ', size);
  char *q = sp ? strchr(sp + 1, '?') : NULL;
  if (q) {
    char *qe = strpbrk(q + 1, " \r\n");
    if (qe)
      *qe = 0;
    char small[2], tok[PA_NETGW_TOKEN_MAX + 1];
    pa_core_query(q + 1, "token", small, sizeof small);
    pa_core_query(q + 1, "token", tok, sizeof tok);
    pa_core_query(q + 1, "robot", tok, sizeof tok);
  }
  static pa_netgw g;
  strcpy(g.token, "s3cret");
  char auth[512], cookie[512];
  size_t hl = strnlen(buf, size) < size ? strnlen(buf, size) : size;
  pa_core_token_ok(&g, q ? q + 1 : NULL,
                   header(buf, hl, "Authorization", auth, sizeof auth),
                   header(buf, hl, "Cookie", cookie, sizeof cookie));
  free(z);
  free(buf);
  return 0;
}
