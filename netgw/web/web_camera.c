/* web_camera.c - GET /api/camera?robot=N: the newest head-camera image of a
 * robot as JPEG, for the viewer. A request keeps that robot's camera demand
 * up for CAM_HOLD_NS (pa-render renders only robots someone watches); the
 * answer is 204 until the first image is there. The live tick follows the
 * camera ring on a cursor of its own and keeps each watched robot's newest
 * image. */
#define _GNU_SOURCE
#include "web_int.h"

#include "pa_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <turbojpeg.h>

#define CAM_HOLD_NS 3000000000LL /* demand held after the last request */
#define CAM_READS_PER_TICK 64    /* ring records read per live tick */
#define CAM_JPEG_QUALITY 80

typedef struct cam_robot {
  bool demand;
  int64_t until_ns;
  uint8_t *rgb; /* newest image, width * height * 3 */
  uint32_t size, seq;
  uint16_t width, height;
  double sim_time;
} cam_robot;

typedef struct pa_webcam {
  pa_ring_cursor cur;
  uint8_t *buf;
  uint32_t cap;
  uint32_t n; /* max_robots */
  unsigned watched;
  cam_robot *r;
  tjhandle tj;
} pa_webcam;

int pa_webcam_init(pa_web *w) {
  pa_netgw *g = w->g;
  pa_webcam *c = calloc(1, sizeof *c);
  if (!c)
    return -1;
  w->cam = c;
  c->n = g->ctl->def.max_robots;
  c->cap = pa_ring_max_record(g->st->camera);
  c->buf = malloc(c->cap);
  c->r = calloc(c->n, sizeof *c->r);
  c->tj = tjInitCompress();
  return c->buf && c->r && c->tj ? 0 : -1;
}

static void release(pa_web *w, cam_robot *cr, uint32_t robot) {
  if (cr->demand) {
    pa_gw_cam_demand(w->g, robot, -1);
    w->cam->watched--;
  }
  cr->demand = false;
  free(cr->rgb);
  cr->rgb = NULL;
  cr->size = 0;
}

void pa_webcam_free(pa_web *w) {
  pa_webcam *c = w->cam;
  if (!c)
    return;
  for (uint32_t i = 0; c->r && i < c->n; i++)
    release(w, &c->r[i], i);
  if (c->tj)
    tjDestroy(c->tj);
  free(c->r);
  free(c->buf);
  free(c);
  w->cam = NULL;
}

void pa_webcam_tick(pa_web *w) {
  pa_webcam *c = w->cam;
  if (!c || !c->watched)
    return;
  int64_t now = pa_now_ns();
  for (uint32_t i = 0; i < c->n; i++)
    if (c->r[i].demand && now > c->r[i].until_ns)
      release(w, &c->r[i], i); /* nobody asked for a while */
  for (int k = 0; k < CAM_READS_PER_TICK && c->watched; k++) {
    uint32_t len;
    uint64_t seq;
    if (pa_ring_read_next(w->g->st->camera, &c->cur, c->buf, c->cap, &len,
                          &seq) != 0)
      break;
    const pa_frame *f = (const pa_frame *)c->buf;
    if (len < sizeof *f || f->robot >= c->n || !c->r[f->robot].demand ||
        f->size != (uint32_t)f->width * f->height * 3 ||
        sizeof *f + f->size > len)
      continue;
    cam_robot *cr = &c->r[f->robot];
    if (cr->size != f->size) {
      uint8_t *p = realloc(cr->rgb, f->size);
      if (!p)
        continue;
      cr->rgb = p;
      cr->size = f->size;
    }
    memcpy(cr->rgb, f + 1, f->size);
    cr->width = f->width;
    cr->height = f->height;
    cr->seq = f->seq;
    cr->sim_time = f->sim_time;
  }
}

void pa_webcam_request(pa_web *w, struct evhttp_request *req,
                       const char *query) {
  pa_webcam *c = w->cam;
  char v[32], *end;
  long id = -1;
  if (pa_core_query(query, "robot", v, sizeof v)) {
    id = strtol(v, &end, 10);
    if (end == v || *end)
      id = -1;
  }
  pa_robot_info info;
  uint32_t idx;
  if (!c || id < 0 || (uint64_t)id >= c->n ||
      pa_gw_robot(w->g, NULL, id, &info, &idx) != 0) {
    pa_web_reply_text(req, 404, "Not Found",
                      "unknown_robot: give ?robot=<id> of a robot");
    return;
  }
  cam_robot *cr = &c->r[id];
  if (!cr->demand) {
    if (!c->watched)
      c->cur = pa_ring_cursor_now(w->g->st->camera);
    cr->demand = true;
    c->watched++;
    pa_gw_cam_demand(w->g, (uint32_t)id, +1);
  }
  cr->until_ns = pa_now_ns() + CAM_HOLD_NS;
  if (!cr->rgb) {
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After",
                      "1");
    /* 204, not an error: the renderer starts on this request */
    evhttp_send_reply(req, 204, "No Content", NULL);
    return;
  }
  unsigned char *jpeg = NULL;
  unsigned long jsize = 0;
  if (tjCompress2(c->tj, cr->rgb, cr->width, 0, cr->height, TJPF_RGB, &jpeg,
                  &jsize, TJSAMP_420, CAM_JPEG_QUALITY, TJFLAG_FASTDCT) != 0) {
    tjFree(jpeg);
    pa_web_reply_text(req, 500, "Internal Server Error", tjGetErrorStr2(c->tj));
    return;
  }
  struct evbuffer *b = evbuffer_new();
  if (b)
    evbuffer_add(b, jpeg, jsize);
  tjFree(jpeg);
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  char s[64];
  evhttp_add_header(h, "Content-Type", "image/jpeg");
  evhttp_add_header(h, "Cache-Control", "no-store");
  snprintf(s, sizeof s, "%.6f", cr->sim_time);
  evhttp_add_header(h, "X-Sim-Time", s);
  snprintf(s, sizeof s, "%u", cr->seq);
  evhttp_add_header(h, "X-Frame-Seq", s);
  evhttp_send_reply(req, 200, "OK", b);
  if (b)
    evbuffer_free(b);
}
