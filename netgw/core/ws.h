/* WebSocket connections on the gateway's libevent loop.
 *
 * The framing (masking, fragmentation, control frames, close handshake) is
 * wslay's; this module does the HTTP/1.1 upgrade (RFC 6455 section 4.2),
 * moves bytes between wslay and a bufferevent, and bounds what a slow peer
 * can make us queue. Used by the web viewer's /ws and the Foxglove server.
 */
#ifndef PA_WS_H
#define PA_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/util.h>

struct pa_ws;

struct pa_ws_cbs {
  /* A whole message (fragments joined). `data` is valid during the call. */
  void (*on_text)(struct pa_ws *ws, const char *data, size_t len, void *arg);
  void (*on_binary)(struct pa_ws *ws, const uint8_t *data, size_t len,
                    void *arg);
  /* Called once when the connection ends for any reason (peer close, error,
   * pa_ws_close done, limits); `ws` is freed right after it returns. */
  void (*on_close)(struct pa_ws *ws, void *arg);
  /* Optional: the output drained below a quarter of max_queued (a sender
   * that held back its frames may go on). */
  void (*on_drain)(struct pa_ws *ws, void *arg);
};

struct pa_ws_limits {
  size_t max_message; /* a larger incoming message closes with 1009 */
  /* pa_ws_send* refuse (-1) while this many bytes wait (one message alone
   * may be larger). Everything sent counts, pongs and close frames too:
   * past half of it the peer is not read (backpressure) until its output
   * drains below a quarter. */
  size_t max_queued;
  uint64_t *pauses; /* optional: counts the read pauses */
};

/* The longest HTTP request head the upgrade reads (bytes). */
#define PA_WS_MAX_HEAD 8192

/* Parses a request head ("GET /path HTTP/1.1\r\n...\r\n\r\n"), checks it is a
 * WebSocket upgrade (GET, HTTP/1.1, Upgrade: websocket, Connection: upgrade,
 * Sec-WebSocket-Version: 13, a 16-byte Sec-WebSocket-Key) and copies the path
 * (without query) into `path`. Returns 1 for an upgrade, 0 for a request that
 * is not one (plain HTTP), -1 for a malformed head (err says why). */
int pa_ws_parse_head(const char *head, size_t len, char *path, size_t path_len,
                     char *err, size_t errlen);

/* The value of header `name` (case-insensitive) in `head`, trimmed, into
 * `out`; returns its length or -1 when absent or longer than out_len - 1. */
int pa_ws_header(const char *head, size_t len, const char *name, char *out,
                 size_t out_len);

/* Takes over `fd` (non-blocking, whose request head `head` has been read and
 * consumed), writes the 101 response choosing the first of `subprotocols`
 * (NULL-terminated list, or NULL for none) that the client offers, and starts
 * the connection. When the head is not a valid upgrade or offers none of a
 * non-empty `subprotocols`, writes a 400 response, closes fd and returns NULL
 * with err set. `extra` bytes that followed the head (already read) are fed to
 * the framing first. */
struct pa_ws *
pa_ws_accept(struct event_base *base, evutil_socket_t fd, const char *head,
             size_t head_len, const uint8_t *extra, size_t extra_len,
             const char *const *subprotocols, const struct pa_ws_limits *limits,
             const struct pa_ws_cbs *cbs, void *arg, char *err, size_t errlen);

/* Queue one message. Returns 0, or -1 when the connection is closing or
 * `max_queued` bytes already wait (the caller drops and counts the frame). */
int pa_ws_send_text(struct pa_ws *ws, const char *data, size_t len);
int pa_ws_send_binary(struct pa_ws *ws, const void *data, size_t len);

/* Bytes queued and not yet written to the socket (backpressure). */
size_t pa_ws_queued(const struct pa_ws *ws);

/* The subprotocol chosen at the upgrade ("" for none) and the request path. */
const char *pa_ws_subprotocol(const struct pa_ws *ws);
const char *pa_ws_path(const struct pa_ws *ws);

/* Stops (false) or resumes (true) reading the peer: a caller whose own
 * queue for this peer's requests is full. */
void pa_ws_set_reading(struct pa_ws *ws, bool on);

/* Starts the close handshake (code, reason); on_close follows later. */
void pa_ws_close(struct pa_ws *ws, uint16_t code, const char *reason);

/* Ends the connection now without a handshake (gateway shutdown); calls
 * on_close and frees. */
void pa_ws_free(struct pa_ws *ws);

#endif
