/* test_sim_util.c - see test_sim_util.h. */
#include "test_sim_util.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ts_room(pa_grid *g, uint32_t w, uint32_t h, double res) {
  memset(g, 0, sizeof *g);
  g->width = w;
  g->height = h;
  g->resolution = res;
  g->occupied_min = PA_CELL_OCCUPIED;
  g->cells = calloc((size_t)w * h, 1);
  assert_non_null(g->cells);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++)
      if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
        g->cells[(size_t)y * w + x] = PA_CELL_OCCUPIED;
}

void ts_block(pa_grid *g, double x0, double y0, double x1, double y1) {
  for (uint32_t y = 0; y < g->height; y++)
    for (uint32_t x = 0; x < g->width; x++) {
      double cx = g->origin_x + (x + 0.5) * g->resolution;
      double cy = g->origin_y + (y + 0.5) * g->resolution;
      if (cx >= x0 && cx <= x1 && cy >= y0 && cy <= y1)
        g->cells[(size_t)y * g->width + x] = PA_CELL_OCCUPIED;
    }
}

pa_robot_def ts_robot(const char *name, double x, double y, double theta) {
  pa_robot_def r = pa_robot_def_default();
  snprintf(r.name, sizeof r.name, "%s", name);
  r.x = x;
  r.y = y;
  r.theta = theta;
  return r;
}

/* An obstacle def of that shape at a pose (sizes are the caller's). */
static pa_obstacle_def obstacle(const char *name, int shape, double x, double y,
                                double theta) {
  pa_obstacle_def o;
  memset(&o, 0, sizeof o);
  snprintf(o.name, sizeof o.name, "%s", name);
  o.shape = shape;
  o.x = x;
  o.y = y;
  o.theta = theta;
  return o;
}

pa_obstacle_def ts_box(const char *name, double x, double y, double theta,
                       double sx, double sy) {
  pa_obstacle_def o = obstacle(name, PA_SHAPE_BOX, x, y, theta);
  o.size_x = sx;
  o.size_y = sy;
  return o;
}

pa_obstacle_def ts_circle(const char *name, double x, double y,
                          double radius) {
  pa_obstacle_def o = obstacle(name, PA_SHAPE_CIRCLE, x, y, 0);
  o.radius = radius;
  return o;
}

void ts_make(pa_sim_model *m, pa_sim_state *s, const pa_sim_def *d,
             const pa_grid *g, pa_robot_def *robots, size_t nr,
             pa_obstacle_def *obs, size_t no) {
  pa_world w;
  memset(&w, 0, sizeof w);
  w.robots = robots;
  w.robot_count = nr;
  w.obstacles = obs;
  w.obstacle_count = no;
  w.unknown_blocks = true;
  char err[256] = "";
  int rc = pa_sim_model_init(m, d, &w, g, err, sizeof err);
  if (rc != 0)
    fail_msg("model: %s", err);
  rc = pa_sim_state_init(m, s, err, sizeof err);
  if (rc != 0)
    fail_msg("state: %s", err);
}

void ts_make_default(pa_sim_model *m, pa_sim_state *s, pa_grid *g,
                     pa_robot_def *robots, size_t nr, pa_obstacle_def *obs,
                     size_t no) {
  pa_sim_def d = pa_sim_def_default();
  ts_make(m, s, &d, g, robots, nr, obs, no);
  pa_grid_free(g);
}

ts_world *ts_world_alloc(void **st) {
  ts_world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  *st = w;
  return w;
}

int ts_world_free(void **st) {
  ts_world *w = *st;
  ts_free(&w->m, &w->s);
  free(w);
  return 0;
}

void ts_free(pa_sim_model *m, pa_sim_state *s) {
  pa_sim_state_free(s);
  pa_sim_model_free(m);
}

pa_status ts_cmd(const pa_sim_model *m, pa_sim_state *s, uint32_t op,
                 uint32_t robot, double a0, double a1, double a2, double a3) {
  pa_cmd c;
  memset(&c, 0, sizeof c);
  c.op = op;
  c.robot = robot;
  if (op == PA_OP_SET_CMD) {
    c.drive.v = a0;
    c.drive.vy = a1;
    c.drive.w = a2;
    c.drive.head_rate = a3;
  } else if (op == PA_OP_TELEPORT) {
    c.pose.x = a0;
    c.pose.y = a1;
    c.pose.theta = a2;
  }
  pa_reply r;
  return pa_sim_apply(m, s, &c, &r);
}
