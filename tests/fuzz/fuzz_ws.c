/* fuzz_ws.c - libFuzzer target: the WebSocket layer (netgw/core/ws.c) as a
 * browser or Foxglove client meets it. An input is a request head, then the
 * bytes that follow it on the wire (frames); without a blank line the whole
 * input follows a valid head. The connection runs on a real event loop over
 * a socket pair and echoes what it receives. */
#include "ws.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char k_head[] = "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\nSec-WebSocket-Version: "
                             "13\r\nSec-WebSocket-Key: "
                             "dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";

static bool g_closed;

static void on_text(struct pa_ws *ws, const char *d, size_t n, void *arg) {
  pa_ws_send_text(ws, d, n);
}

static void on_binary(struct pa_ws *ws, const uint8_t *d, size_t n, void *arg) {
  if (n && d[0] == 0xff)
    pa_ws_close(ws, 1000, "bye");
  else
    pa_ws_send_binary(ws, d, n);
}

static void on_close(struct pa_ws *ws, void *arg) { g_closed = true; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const struct pa_ws_cbs cbs = {on_text, on_binary, on_close};
  const struct pa_ws_limits lim = {.max_message = 1 << 16,
                                   .max_queued = 1 << 16};
  const uint8_t *end = NULL;
  for (size_t i = 0; i + 4 <= size && i < PA_WS_MAX_HEAD; i++)
    if (memcmp(data + i, "\r\n\r\n", 4) == 0) {
      end = data + i + 4;
      break;
    }
  /* exact-size heap copies, so ASan sees any read past either part */
  size_t hl = end ? (size_t)(end - data) : sizeof k_head - 1;
  char *head = malloc(hl);
  memcpy(head, end ? (const void *)data : k_head, hl);
  size_t xl = end ? size - hl : size;
  uint8_t *extra = malloc(xl ? xl : 1);
  memcpy(extra, end ? end : data, xl);

  char path[256], err[160];
  pa_ws_parse_head(head, hl, path, sizeof path, err, sizeof err);
  char v[64];
  pa_ws_header(head, hl, "Sec-WebSocket-Protocol", v, sizeof v);

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
    struct event_base *base = event_base_new();
    const char *protos[] = {"foxglove.websocket.v1", NULL};
    g_closed = false;
    struct pa_ws *ws = pa_ws_accept(base, sv[1], head, hl, extra, xl,
                                    size && (data[0] & 1) ? protos : NULL, &lim,
                                    &cbs, NULL, err, sizeof err);
    if (ws) {
      for (int i = 0; i < 4 && !g_closed; i++)
        event_base_loop(base, EVLOOP_NONBLOCK);
      if (!g_closed)
        pa_ws_free(ws);
    }
    close(sv[0]);
    event_base_free(base);
  }
  free(head);
  free(extra);
  return 0;
}
