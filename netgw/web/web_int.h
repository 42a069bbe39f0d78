/* web_int.h - private to pa_netgw: the browser side. http.c serves pages,
 * /metrics and uploads with evhttp and hands /ws upgrades to web_ws.c;
 * metrics.c keeps the counters and histograms /metrics shows. */
#ifndef PA_WEB_INT_H
#define PA_WEB_INT_H

#include "netgw_int.h"

#include <limits.h>

#include <event2/buffer.h>

/* Live-data channels of /ws (frames and bytes per channel in /metrics). */
enum {
  WS_CH_STATE,
  WS_CH_SCAN,
  WS_CH_WORLD,
  WS_CH_MAP,
  WS_CH_REPLY,
  WS_CH_STATUS,
  WS_CH_COUNT
};
extern const char *const pa_web_ws_ch_name[WS_CH_COUNT];

struct pa_webws;  /* one browser connection (web_ws.c) */
struct pa_webcam; /* camera images for the viewer (web_camera.c) */
struct evhttp_request;
struct pa_peek;  /* a connection whose request head is being read */
struct pa_relay; /* a plain HTTP connection relayed to evhttp */

typedef struct pa_web {
  pa_netgw *g;
  struct evhttp *http;
  struct evconnlistener *lis;
  unsigned port;
  char dir[PATH_MAX];       /* canonical web/ */
  char upload[PATH_MAX];    /* canonical upload dir, "" = off */
  struct pa_peek *peeks;    /* heads still being read */
  struct pa_relay *relays;  /* plain HTTP connections, relayed to evhttp */
  struct sockaddr_in inner; /* evhttp's loopback address */
  struct pa_webws *ws;      /* browser connections */
  unsigned n_ws;
  struct event *live_ev; /* live frames and metric samples, 20 Hz */
  uint64_t live_n;
  uint32_t *scan_seq; /* [max_robots] the scan seq last sent to /ws */
  struct pa_webcam *cam;
  /* metrics */
  uint64_t http_requests, http_refused, ws_accepted, ws_refused;
  uint64_t ws_frames[WS_CH_COUNT], ws_bytes[WS_CH_COUNT], ws_dropped;
  pa_hist sim_period;   /* pa-sim's mean loop period per sample */
  uint64_t last_loops;  /* pa-sim loops at the previous sample */
  int64_t last_wall_ns; /* newest tick's wall time then */
  double last_sim_time;
  double rtf; /* sim seconds per wall second, last samples */
  int64_t rtf_wall_ns;
  double rtf_sim_time;
  /* web_ws.c: the world snapshot as last read (agents move every tick) */
  pa_obstacle_info *obs; /* [max_obstacles] */
  uint32_t n_obs, snap_gen;
  uint64_t world_sig; /* hash of the snapshot but agents' poses */
  bool have_snap;
  pa_visual_block *vis; /* visual objects as last read (NULL = none yet) */
  /* web_vis.c: what each visual was at the newest and at the previous copy
   * (a viewer that had the previous gets the delta built once for all) */
  struct pa_vis_table *vis_cur, *vis_prev;
  uint32_t vis_cur_gen, vis_prev_gen;
  bool vis_cur_ok, vis_prev_ok;
} pa_web;

/* http.c; its row in the front-end table */
extern const pa_frontend pa_fe_web;
int pa_web_start(pa_netgw *g, char *err, size_t err_sz);
void pa_web_stop(pa_netgw *g);
/* Where a connection goes by the first n bytes it sent (no NUL needed). */
typedef enum pa_http_route {
  PA_HTTP_MORE,  /* no whole request line (or /ws head) yet: wait */
  PA_HTTP_DROP,  /* none within PA_WS_MAX_HEAD bytes, or a NUL in a /ws head */
  PA_HTTP_RELAY, /* anything but /ws: relayed whole to evhttp */
  PA_HTTP_WS,    /* GET /ws: read its head (with_head false: not yet asked) */
} pa_http_route;
/* The routing decision of the browser port, a pure function of the bytes
 * (the fuzz target drives it). with_head: the caller needs the whole /ws
 * head; then PA_HTTP_WS sets *head_len (through the blank line). */
pa_http_route pa_http_route_head(const char *buf, size_t n, bool with_head,
                                 size_t *head_len);
/* A text/plain reply of one line. */
void pa_web_reply_text(struct evhttp_request *req, int code, const char *why,
                       const char *text);

#define PA_WEB_UPLOAD_MAX (32u << 20) /* [bytes] one uploaded file */

/* http_relay.c: a plain HTTP connection (fd, from peer) relayed to evhttp,
 * its request heads checked before their bodies are read. */
void pa_web_relay_start(pa_web *w, evutil_socket_t fd,
                        const struct sockaddr_in *peer);
void pa_web_relay_free_all(pa_web *w);
uint32_t pa_web_relay_count(const pa_web *w, uint32_t addr); /* from addr */

/* web_ws.c */
/* A growable buffer for the frames; oom once an allocation failed (then
 * every later call does nothing). */
typedef struct pa_sbuf {
  char *s;
  size_t n, cap;
  bool oom;
} pa_sbuf;
bool pa_sb_reserve(pa_sbuf *b, size_t need); /* room for need bytes in all */
void pa_sb_printf(pa_sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pa_sb_bytes(pa_sbuf *b, const void *p, size_t n);
void pa_sb_u32(pa_sbuf *b, uint32_t v); /* little-endian, as the host's */
/* Browser connections from addr (network order). */
uint32_t pa_webws_count(const pa_web *w, uint32_t addr);
/* Takes over fd whose request head (head, consumed) asks for /ws. */
void pa_webws_accept(pa_web *w, evutil_socket_t fd,
                     const struct sockaddr_in *peer, const char *head,
                     size_t head_len, const uint8_t *extra, size_t extra_len);
void pa_webws_tick(pa_web *w); /* sends the live frames */
void pa_webws_free_all(pa_web *w);

/* web_vis.c: the visual objects for /ws, sent as deltas (issue 32) */
typedef struct pa_vis_sum {
  char name[PA_VIS_NAME_MAX];
  uint64_t hash; /* of all it shows (not its place in the block) */
} pa_vis_sum;
typedef struct pa_vis_table {
  uint32_t n;
  pa_vis_sum v[PA_VIS_MAX];
} pa_vis_table;
/* Copies the visuals when their gen moved; true when w->vis and
 * w->vis_cur hold the current ones (that gen in *gen). */
bool pa_webvis_refresh(pa_web *w, uint32_t *gen);
/* "visuals" text and binary "VIS1" of w->vis: all of them (old NULL), or
 * those that differ from old and the names of those gone since. */
void pa_webvis_build(const pa_web *w, const pa_vis_table *old, pa_sbuf *b,
                     pa_sbuf *bin);
/* *dst = w->vis_cur (allocated on first use): false when out of memory. */
bool pa_webvis_keep(const pa_web *w, pa_vis_table **dst);
void pa_webvis_free(pa_web *w);

/* web_camera.c */
int pa_webcam_init(pa_web *w);
void pa_webcam_free(pa_web *w); /* gives back the camera demand it holds */
void pa_webcam_tick(pa_web *w);
/* GET /api/camera?robot=N */
void pa_webcam_request(pa_web *w, struct evhttp_request *req,
                       const char *query);

/* metrics.c */
int pa_metrics_init(pa_web *w);
void pa_metrics_free(pa_web *w);
void pa_metrics_sample(pa_web *w); /* each live tick: sim period, RTF */
/* Prometheus text format 0.0.4 into out. */
void pa_metrics_write(pa_web *w, struct evbuffer *out);
/* Processes as `playarea status` shows them, as a JSON array text. */
char *pa_web_status_json(pa_netgw *g);

#endif
