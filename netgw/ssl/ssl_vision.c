/* ssl_vision.c - SSL-Vision output of an SSL world: SSL_WrapperPacket
 * detection frames (millimetres) of the newest tick at --ssl_vision_hz,
 * also while paused (the same positions, new times: t_capture and t_sent
 * are Unix seconds, as SSL-Vision's), and the field geometry in the first
 * frame and every 60th (docs/ssl.md). */
#define _GNU_SOURCE
#include "ssl_int.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SSL_GEOMETRY_EVERY 60 /* frames between geometry packets */

/* Realism's generator (splitmix64): uniform in [0, 1). */
static double uniform(pa_ssl_gw *x) {
  uint64_t z = (x->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* Gaussian noise of sigma s (0: none, nothing drawn). */
static double gauss(pa_ssl_gw *x, double s) {
  if (s <= 0)
    return 0;
  double u = uniform(x), v = uniform(x);
  return s * sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

static bool dropped(pa_ssl_gw *x, double p) { return p > 0 && uniform(x) < p; }

static double unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Robot slot i's body height [mm] (its spec's, set_property's). */
static float height_mm(pa_netgw *g, uint32_t i) {
  pa_robot_info ri;
  uint32_t idx;
  if (pa_gw_robot(g, NULL, (long)i, &ri, &idx) != 0 || !(ri.height > 0))
    return 150;
  return ri.height * 1000;
}

static void set_line(pa_ssl_gw *x, int i, const char *name, double x1,
                     double y1, double x2, double y2, SSLFieldShapeType type) {
  SSLFieldLineSegment init = SSL__FIELD_LINE_SEGMENT__INIT;
  Vector2f vi = VECTOR2F__INIT;
  x->line[i] = init;
  x->pt[i][0] = vi;
  x->pt[i][1] = vi;
  x->pt[i][0].x = (float)(x1 * 1000);
  x->pt[i][0].y = (float)(y1 * 1000);
  x->pt[i][1].x = (float)(x2 * 1000);
  x->pt[i][1].y = (float)(y2 * 1000);
  x->line[i].name = (char *)name;
  x->line[i].p1 = &x->pt[i][0];
  x->line[i].p2 = &x->pt[i][1];
  x->line[i].thickness = (float)(x->f.line_width * 1000);
  x->line[i].has_type = 1;
  x->line[i].type = type;
  x->line_p[i] = &x->line[i];
}

void pa_ssl_vision_geometry(pa_ssl_gw *x) {
  const pa_ssl_field *f = &x->f;
  double hl = f->length / 2, hw = f->width / 2;
  double dd = f->defense_depth, dw = f->defense_width / 2;
  set_line(x, 0, "TopTouchLine", -hl, hw, hl, hw,
           SSL__FIELD_SHAPE_TYPE__TopTouchLine);
  set_line(x, 1, "BottomTouchLine", -hl, -hw, hl, -hw,
           SSL__FIELD_SHAPE_TYPE__BottomTouchLine);
  set_line(x, 2, "LeftGoalLine", -hl, -hw, -hl, hw,
           SSL__FIELD_SHAPE_TYPE__LeftGoalLine);
  set_line(x, 3, "RightGoalLine", hl, -hw, hl, hw,
           SSL__FIELD_SHAPE_TYPE__RightGoalLine);
  set_line(x, 4, "HalfwayLine", 0, -hw, 0, hw,
           SSL__FIELD_SHAPE_TYPE__HalfwayLine);
  set_line(x, 5, "CenterLine", -hl, 0, hl, 0,
           SSL__FIELD_SHAPE_TYPE__CenterLine);
  set_line(x, 6, "LeftPenaltyStretch", -hl + dd, -dw, -hl + dd, dw,
           SSL__FIELD_SHAPE_TYPE__LeftPenaltyStretch);
  set_line(x, 7, "RightPenaltyStretch", hl - dd, -dw, hl - dd, dw,
           SSL__FIELD_SHAPE_TYPE__RightPenaltyStretch);
  set_line(x, 8, "LeftFieldLeftPenaltyStretch", -hl, -dw, -hl + dd, -dw,
           SSL__FIELD_SHAPE_TYPE__LeftFieldLeftPenaltyStretch);
  set_line(x, 9, "LeftFieldRightPenaltyStretch", -hl, dw, -hl + dd, dw,
           SSL__FIELD_SHAPE_TYPE__LeftFieldRightPenaltyStretch);
  set_line(x, 10, "RightFieldLeftPenaltyStretch", hl, dw, hl - dd, dw,
           SSL__FIELD_SHAPE_TYPE__RightFieldLeftPenaltyStretch);
  set_line(x, 11, "RightFieldRightPenaltyStretch", hl, -dw, hl - dd, -dw,
           SSL__FIELD_SHAPE_TYPE__RightFieldRightPenaltyStretch);
  SSLFieldCircularArc ai = SSL__FIELD_CIRCULAR_ARC__INIT;
  Vector2f vi = VECTOR2F__INIT;
  x->arc = ai;
  x->centre = vi;
  x->arc.name = "CenterCircle";
  x->arc.center = &x->centre;
  x->arc.radius = (float)(f->center_radius * 1000);
  x->arc.a1 = 0;
  x->arc.a2 = (float)(2 * M_PI);
  x->arc.thickness = (float)(f->line_width * 1000);
  x->arc.has_type = 1;
  x->arc.type = SSL__FIELD_SHAPE_TYPE__CenterCircle;
  x->arc_p[0] = &x->arc;
  SSLGeometryFieldSize si = SSL__GEOMETRY_FIELD_SIZE__INIT;
  x->size = si;
  x->size.field_length = (int32_t)lround(f->length * 1000);
  x->size.field_width = (int32_t)lround(f->width * 1000);
  x->size.goal_width = (int32_t)lround(f->goal_width * 1000);
  x->size.goal_depth = (int32_t)lround(f->goal_depth * 1000);
  x->size.boundary_width = (int32_t)lround(f->boundary * 1000);
  x->size.n_field_lines = SSL_LINES;
  x->size.field_lines = x->line_p;
  x->size.n_field_arcs = 1;
  x->size.field_arcs = x->arc_p;
  x->size.has_penalty_area_depth = 1;
  x->size.penalty_area_depth = (int32_t)lround(f->defense_depth * 1000);
  x->size.has_penalty_area_width = 1;
  x->size.penalty_area_width = (int32_t)lround(f->defense_width * 1000);
  x->size.has_center_circle_radius = 1;
  x->size.center_circle_radius = (int32_t)lround(f->center_radius * 1000);
  x->size.has_line_thickness = 1;
  x->size.line_thickness = (int32_t)lround(f->line_width * 1000);
  x->size.has_goal_height = 1;
  x->size.goal_height = (int32_t)lround(f->goal_height * 1000);
  x->size.has_ball_radius = 1;
  x->size.ball_radius = 21.335f;
  x->size.has_max_robot_radius = 1;
  x->size.max_robot_radius = 90;
  SSLBallModelStraightTwoPhase st = SSL__BALL_MODEL_STRAIGHT_TWO_PHASE__INIT;
  st.acc_slide = -PA_SSL_ACC_SLIDE; /* accelerations: negative */
  st.acc_roll = -PA_SSL_ACC_ROLL;
  st.k_switch = PA_SSL_ROLL_RATIO;
  x->straight = st;
  SSLGeometryModels mi = SSL__GEOMETRY_MODELS__INIT;
  x->models = mi;
  x->models.straight_two_phase = &x->straight;
  SSLGeometryData gi = SSL__GEOMETRY_DATA__INIT;
  x->geo = gi;
  x->geo.field = &x->size;
  x->geo.models = &x->models;
}

/* Which robot slots are SSL robots (b<id> / y<id>), per world change. */
static void refresh_map(pa_ssl_gw *x) {
  pa_netgw *g = x->g;
  uint32_t gen = __atomic_load_n(&g->ctl->world_gen, __ATOMIC_ACQUIRE);
  if (x->have_map && gen == x->map_gen)
    return;
  uint32_t max = g->ctl->def.max_robots;
  for (uint32_t i = 0; i < max; i++) {
    pa_robot_info ri;
    uint32_t idx;
    x->team[i] = -1;
    if (pa_gw_robot(g, NULL, (long)i, &ri, &idx) != 0)
      continue;
    const char *n = ri.name;
    if ((n[0] != 'b' && n[0] != 'y') || n[1] < '0' || n[1] > '9')
      continue;
    char *end;
    long id = strtol(n + 1, &end, 10);
    if (*end || id < 0 || id > 15)
      continue;
    x->team[i] = n[0] == 'b' ? 0 : 1;
    x->sid[i] = (uint8_t)id;
  }
  x->map_gen = gen;
  x->have_map = true;
}

static void send_packet(pa_ssl_gw *x, const SSLWrapperPacket *w) {
  size_t n = ssl__wrapper_packet__get_packed_size(w);
  if (!pa_ssl_out_reserve(x, n))
    return;
  size_t len = ssl__wrapper_packet__pack(w, x->out);
  ssize_t s = sendto(x->vfd, x->out, len, MSG_DONTWAIT,
                     (const struct sockaddr *)&x->vdest, sizeof x->vdest);
  if (s == (ssize_t)len)
    x->frames++;
}

void pa_ssl_vision_frame(pa_ssl_gw *x, const pa_tick *t, SSLDetectionFrame *fr,
                         SSLDetectionBall *ball, SSLDetectionBall **bp) {
  pa_netgw *g = x->g;
  refresh_map(x);
  SSLDetectionFrame fi = SSL__DETECTION_FRAME__INIT;
  SSLDetectionBall bi = SSL__DETECTION_BALL__INIT;
  *fr = fi;
  *ball = bi;
  *bp = ball;
  fr->frame_number = ++x->frame;
  fr->t_sent = unix_now();
  fr->t_capture = fr->t_sent - x->proc_time;
  fr->camera_id = 0;
  if (t->ball_holder != -2 && !dropped(x, x->ball_dropout)) {
    ball->confidence = 1;
    ball->x = (float)((t->ball[0] + gauss(x, x->noise_ball)) * 1000);
    ball->y = (float)((t->ball[1] + gauss(x, x->noise_ball)) * 1000);
    ball->has_z = 1;
    ball->z = (float)(t->ball[2] * 1000);
    fr->n_balls = 1;
    fr->balls = bp;
  }
  const pa_robot_state *rs = (const pa_robot_state *)(t + 1);
  uint32_t nb = 0, ny = 0, max = g->ctl->def.max_robots;
  for (uint32_t i = 0; i < t->robot_count && i < max; i++) {
    if (!(rs[i].flags & PA_RS_ACTIVE) || x->team[i] < 0 ||
        dropped(x, x->dropout))
      continue;
    SSLDetectionRobot *r = &x->rob[nb + ny];
    SSLDetectionRobot init = SSL__DETECTION_ROBOT__INIT;
    *r = init;
    r->confidence = 1;
    r->has_robot_id = 1;
    r->robot_id = x->sid[i];
    r->x = (float)((rs[i].x + gauss(x, x->noise_pos)) * 1000);
    r->y = (float)((rs[i].y + gauss(x, x->noise_pos)) * 1000);
    r->has_orientation = 1;
    r->orientation = (float)(rs[i].theta + gauss(x, x->noise_theta));
    r->has_height = 1;
    r->height = height_mm(g, i);
    if (x->team[i] == 0)
      x->blue[nb++] = r;
    else
      x->yellow[ny++] = r;
  }
  fr->n_robots_blue = nb;
  fr->robots_blue = x->blue;
  fr->n_robots_yellow = ny;
  fr->robots_yellow = x->yellow;
}

void pa_ssl_vision_on_timer(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_ssl_gw *x = arg;
  const pa_tick *t = pa_gw_latest(x->g);
  if (!t || !t->ssl || !(t = pa_ssl_delay_tick(x, t, unix_now())))
    return;
  SSLDetectionFrame fr;
  SSLDetectionBall ball, *bp;
  pa_ssl_vision_frame(x, t, &fr, &ball, &bp);
  SSLWrapperPacket w = SSL__WRAPPER_PACKET__INIT;
  w.detection = &fr;
  w.has_source = 1;
  w.source = SSL__SOURCE__SSL_SOURCE_OTHER;
  if (x->frame % SSL_GEOMETRY_EVERY == 1)
    w.geometry = &x->geo; /* the first frame and then once a second */
  send_packet(x, &w);
}
