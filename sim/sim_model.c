/* sim_model.c - the immutable model (grid, distance field, initial world) and
 * the mutable state's allocation and reset. */
#include "pa_props.h"
#include "pa_sim.h"
#include "sim_int.h"
#include "sim_ssl_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pa_sim_def pa_sim_def_default(void) {
  pa_sim_def d;
  memset(&d, 0, sizeof d);
  d.control_hz = 200;
  d.ssl_cmd_timeout_ms = 100;
  d.scan_hz = 10;
  d.speed = 1;
  d.robots = 1;
  d.max_robots = 256;
  d.max_obstacles = 1024;
  d.max_beams = 4096;
  d.laser_beams = 360;
  d.laser_range_min = 0.15;
  d.laser_range_max = 12.0;
  d.laser_noise = 0;
  d.camera_width = 640;
  d.camera_height = 480;
  d.camera_fov = 60.0 * M_PI / 180.0;
  d.spin_us = -1;
  return d;
}

double pa_sim_wrap(double a) {
  if (a >= -M_PI && a <= M_PI)
    return a;
  a = fmod(a + M_PI, 2.0 * M_PI);
  if (a < 0)
    a += 2.0 * M_PI;
  return a - M_PI;
}

/* ---- robot and obstacle records ------------------------------------------ */

/* The flag's value when it was forced (given on the command line) or
 * differs from the built-in default, else the world file's. The fov comes in
 * radians converted from degrees, hence the tolerance. */
static double flag_or_world(const pa_sim_def *d, uint32_t bit, double flag,
                            double dflt, double world) {
  return (d->force & bit) || fabs(flag - dflt) > 1e-9 ? flag : world;
}

/* A robot's or an obstacle's info from its def starts zeroed, named, active,
 * at generation 1. */
#define NEW_INFO(dst, def_name)                                                \
  do {                                                                         \
    memset((dst), 0, sizeof *(dst));                                           \
    snprintf((dst)->name, sizeof(dst)->name, "%s", (def_name));                \
    (dst)->active = 1;                                                         \
    (dst)->gen = 1;                                                            \
  } while (0)

/* Every row of kind from a def into its record (pa_props.h). */
void pa_sim_int_props_from_def(void *rec, const void *def, unsigned kind) {
  for (int i = 0; i < PA_PR_COUNT; i++)
    if (pa_prop((pa_prop_row)i)->kinds & kind)
      for (int k = 0; k < pa_prop_ncomp((pa_prop_row)i); k++)
        pa_prop_put((pa_prop_row)i, rec, k,
                    pa_prop_def_get((pa_prop_row)i, def, k));
}

static void robot_info_from_def(pa_robot_info *ri, const pa_robot_def *rd,
                                const pa_sim_def *d) {
  NEW_INFO(ri, rd->name);
  pa_sim_int_props_from_def(ri, rd, PA_PK_ROBOT);
  ri->drive = rd->drive == PA_DRIVE_OMNI ? PA_DRIVE_OMNI : PA_DRIVE_DIFF;
  ri->wheel_base =
      (float)(rd->wheel_base > 0 ? rd->wheel_base
                                 : PA_WHEEL_BASE_PER_RADIUS * rd->radius);
  pa_robot_def dflt = pa_robot_def_default();
  /* A flag given or differing from the built-in default wins over the
   * world. */
  ri->laser_beams = (uint32_t)flag_or_world(
      d, PA_SIM_FORCE_LASER_BEAMS, d->laser_beams, dflt.laser.beams,
      rd->laser.beams);
  ri->laser_range_min = (float)flag_or_world(
      d, PA_SIM_FORCE_LASER_RANGE_MIN, d->laser_range_min,
      dflt.laser.range_min, rd->laser.range_min);
  ri->laser_range_max = (float)flag_or_world(
      d, PA_SIM_FORCE_LASER_RANGE_MAX, d->laser_range_max,
      dflt.laser.range_max, rd->laser.range_max);
  ri->laser_noise = (float)flag_or_world(d, PA_SIM_FORCE_LASER_NOISE,
                                         d->laser_noise, dflt.laser.noise,
                                         rd->laser.noise);
  ri->cam_width = (uint16_t)flag_or_world(d, PA_SIM_FORCE_CAMERA_WIDTH,
                                          d->camera_width, dflt.camera.width,
                                          rd->camera.width);
  ri->cam_height = (uint16_t)flag_or_world(
      d, PA_SIM_FORCE_CAMERA_HEIGHT, d->camera_height, dflt.camera.height,
      rd->camera.height);
  ri->cam_fov = (float)flag_or_world(d, PA_SIM_FORCE_CAMERA_FOV,
                                     d->camera_fov, dflt.camera.fov,
                                     rd->camera.fov);
  ri->start_x = rd->x;
  ri->start_y = rd->y;
  ri->start_theta = pa_sim_wrap(rd->theta);
  ri->dynamics =
      rd->dynamics == PA_DYN_DYNAMIC ? PA_DYN_DYNAMIC : PA_DYN_KINEMATIC;
  if (d->dynamics == PA_DYN_DYNAMIC) { /* --dynamics dynamic: OceanSim's */
    ri->dynamics = PA_DYN_DYNAMIC;
    if (ri->max_force == (float)dflt.max_force)
      ri->max_force = (float)PA_SIM_OCEANSIM_MAX_FORCE;
  }
  ri->thruster_count = 0;
  for (size_t k = 0; k < rd->thruster_count && k < PA_THRUSTERS_MAX; k++) {
    pa_thruster *t = &ri->thrusters[ri->thruster_count++];
    snprintf(t->name, sizeof t->name, "%s", rd->thrusters[k].name);
    t->x = (float)rd->thrusters[k].x;
    t->y = (float)rd->thrusters[k].y;
    t->dir = (float)rd->thrusters[k].dir;
    t->max_force = (float)rd->thrusters[k].max_force;
  }
  if (d->dynamics == PA_DYN_DYNAMIC && !ri->thruster_count) {
    /* OceanSim's bodies: a twin-thruster profile (surge, and yaw from the
     * difference) for set_thrusters / step thrusters */
    static const char *const names[2] = {"port", "starboard"};
    for (int k = 0; k < 2; k++) {
      pa_thruster *t = &ri->thrusters[ri->thruster_count++];
      snprintf(t->name, sizeof t->name, "%s", names[k]);
      t->x = -0.8f * ri->radius;
      t->y = (k ? -0.6f : 0.6f) * ri->radius;
      t->dir = 0;
      t->max_force = (float)(PA_SIM_OCEANSIM_MAX_FORCE / 2);
    }
  }
}

static void obstacle_info_from_def(pa_obstacle_info *oi,
                                   const pa_obstacle_def *od) {
  NEW_INFO(oi, od->name);
  pa_sim_int_props_from_def(oi, od, PA_PK_OBSTACLE);
  oi->shape = od->shape == PA_SHAPE_CIRCLE ? PA_SHAPE_CIRCLE : PA_SHAPE_BOX;
  oi->x = od->x;
  oi->y = od->y;
  oi->theta = od->theta;
  oi->agent = od->agent > 0 && od->agent < PA_AGENT_COUNT ? (uint32_t)od->agent
                                                          : PA_AGENT_NONE;
}

/* The widest values the world format, the flags and the commands give
 * (loaded snapshots and a restart's adopted world hold any of them). */
int pa_sim_int_check_robot(const pa_robot_info *ri, uint32_t max_beams,
                           char *err, size_t err_sz) {
  const char *bad = NULL;
  if (ri->drive != PA_DRIVE_DIFF && ri->drive != PA_DRIVE_OMNI)
    bad = "drive must be diff or omni";
  else if (ri->laser_beams < 1 || ri->laser_beams > max_beams)
    bad = "laser beams must be in [1, max_beams]";
  else if (!(ri->laser_range_max > ri->laser_range_min))
    bad = "laser range_min must be below range_max";
  else if (!(ri->cam_width >= 1 && ri->cam_height >= 1 &&
             pa_prop_ok_float(PA_PR_CAMERA_FOV_DEG,
                              (float)(ri->cam_fov * 180 / M_PI))))
    bad = "camera size must be >= 1 px and fov in (0, 180) deg";
  else if (!isfinite(ri->start_x) || !isfinite(ri->start_y) ||
           !isfinite(ri->start_theta))
    bad = "start pose must be finite";
  if (!bad)
    bad = pa_sim_int_dyn_check(ri);
  if (bad) {
    snprintf(err, err_sz, "robot '%s': %s", ri->name, bad);
    return -1;
  }
  /* One range per property: the schema's (pa_props.h); words and the
   * camera (checked above) aside. */
  for (int i = 0; i < PA_PR_COUNT; i++) {
    const pa_prop_def *p = pa_prop((pa_prop_row)i);
    if (!(p->kinds & PA_PK_ROBOT) || p->type == PA_PT_WORD ||
        i == PA_PR_CAMERA_FOV_DEG)
      continue;
    for (int k = 0; k < pa_prop_ncomp((pa_prop_row)i); k++) {
      double v = pa_prop_get((pa_prop_row)i, ri, k);
      if (!pa_prop_ok_float((pa_prop_row)i, (float)v)) {
        char rg[64];
        snprintf(err, err_sz, "robot '%s': %s %g must be in %s", ri->name,
                 p->name, v, pa_prop_range((pa_prop_row)i, rg, sizeof rg));
        return -1;
      }
    }
  }
  return 0;
}

int pa_sim_int_check_obstacle(const pa_obstacle_info *o, char *err,
                              size_t err_sz) {
  bool ok = isfinite(o->x) && isfinite(o->y) && isfinite(o->theta);
  if (o->shape == PA_SHAPE_CIRCLE)
    ok = ok && pa_prop_ok(PA_PR_OB_RADIUS, o->radius);
  else
    ok = ok && o->shape == PA_SHAPE_BOX &&
         pa_prop_ok(PA_PR_OB_SIZE, o->size_x) &&
         pa_prop_ok(PA_PR_OB_SIZE, o->size_y);
  ok = ok && o->agent < PA_AGENT_COUNT;
  if (!ok) {
    snprintf(err, err_sz,
             "obstacle '%s': shape must be box or circle, pose finite and "
             "size in range",
             o->name);
    return -1;
  }
  return 0;
}

bool pa_sim_int_state_ok(const pa_robot_state *r) {
  const double v[] = {r->x, r->y, r->theta, r->odom_x, r->odom_y,
                      r->odom_theta, r->v, r->vy, r->w, r->head,
                      r->head_rate, r->cmd_v, r->cmd_vy, r->cmd_w,
                      r->cmd_head};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (!(fabs(v[i]) <= 1e9))
      return false;
  return r->cmd_frame == PA_FRAME_ROBOT || r->cmd_frame == PA_FRAME_WORLD;
}

/* ---- model ---------------------------------------------------------------- */

static int build_fields(pa_sim_model *m, char *err, size_t err_sz) {
  const pa_grid *g = &m->grid;
  size_t n = (size_t)g->width * g->height;
  m->blocked_words = (g->width + 63) / 64;
  m->blocked = calloc((size_t)m->blocked_words * g->height, sizeof(uint64_t));
  m->clear = malloc(n * sizeof(float));
  m->march_w = g->width + 2;
  /* + 4: the vector caster gathers 32-bit words at byte offsets */
  m->march = calloc((size_t)m->march_w * (g->height + 2) + 4, 1);
  if (!m->blocked || !m->clear || !m->march) {
    snprintf(err, err_sz, "out of memory for a %ux%u map", g->width,
             g->height);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    int8_t c = g->cells[i];
    size_t x = i % g->width, y = i / g->width;
    if ((c >= g->occupied_min) || (c < 0 && m->unknown_blocks))
      m->blocked[y * m->blocked_words + x / 64] |= 1ull << (x % 64);
  }
  pa_dist dist;
  memset(&dist, 0, sizeof dist);
  if (pa_dist_build(g, m->unknown_blocks, &dist, err, err_sz) != 0)
    return -1;
  for (size_t i = 0; i < (size_t)m->march_w * (g->height + 2); i++)
    m->march[i] = 0;
  for (size_t i = 0; i < n; i++) {
    float c = (float)(dist.d[i] / g->resolution);
    m->clear[i] = c;
    /* From any point of this cell to any point of a blocked cell (with a
     * little slack for the float distance). */
    double s = (double)c - 1.4143 - 1e-3 * c - 0.02;
    int code = s < 0 ? 1 : s < 32 ? 1 + (int)floor(4 * s)
                                  : 129 + (int)fmin(126, floor(s - 32));
    size_t x = i % g->width, y = i / g->width;
    bool b = (m->blocked[y * m->blocked_words + x / 64] >> (x % 64)) & 1;
    m->march[(y + 1) * m->march_w + x + 1] = b ? 0 : (uint8_t)code;
  }
  m->march_safe[0] = 0;
  for (int v = 1; v < 256; v++)
  {
    m->march_safe[v] = v <= 128 ? (v - 1) * 0.25 : 32.0 + (v - 129);
    m->march_safeq[v] = (int32_t)(m->march_safe[v] * 1024.0);
  }
  pa_dist_free(&dist);
  m->faces = pa_sim_int_faces_build(m); /* NULL: the march caster alone */
  return 0;
}

/* Is (x, y), the centre of cell (cx, cy), a free place by margin? probe:
 * asked by a random probe rather than the sweep. */
typedef bool (*place_free_fn)(const void *ctx, uint32_t cx, uint32_t cy,
                              double x, double y, double margin, bool probe);

enum { PLACE_NONE = 0, PLACE_PROBED = 1, PLACE_SWEPT = 2 };

/* A free cell centre: seeded probes (probe_margin), then a sweep in cell
 * order (sweep_margin). The one placement used at load and on a new map. */
static int find_place(const pa_grid *g, uint64_t *rng, place_free_fn ok,
                      const void *ctx, double probe_margin, double sweep_margin,
                      double *x, double *y) {
  for (int tries = 0; tries < 20000; tries++) {
    uint32_t cx = (uint32_t)(pa_sim_rng_uniform(rng) * g->width);
    uint32_t cy = (uint32_t)(pa_sim_rng_uniform(rng) * g->height);
    pa_grid_cell_center(g, (int)cx, (int)cy, x, y);
    if (ok(ctx, cx, cy, *x, *y, probe_margin, true))
      return PLACE_PROBED;
  }
  for (uint32_t cy = 0; cy < g->height; cy++)
    for (uint32_t cx = 0; cx < g->width; cx++) {
      pa_grid_cell_center(g, (int)cx, (int)cy, x, y);
      if (ok(ctx, cx, cy, *x, *y, sweep_margin, false))
        return PLACE_SWEPT;
    }
  return PLACE_NONE;
}

static int model_init(pa_sim_model *m, const pa_sim_def *d, const pa_world *w,
                      const pa_grid *g, pa_grid *take, char *err,
                      size_t err_sz);

int pa_sim_model_init(pa_sim_model *m, const pa_sim_def *d,
                      const pa_world *w, const pa_grid *g, char *err,
                      size_t err_sz) {
  return model_init(m, d, w, g, NULL, err, err_sz);
}

/* take: g's owner, whose cells the model takes instead of copying them. */
static int model_init(pa_sim_model *m, const pa_sim_def *d, const pa_world *w,
                      const pa_grid *g, pa_grid *take, char *err,
                      size_t err_sz) {
  bool *no_pose = NULL; /* robots that start by (0, 0) (sim_place.c) */
  memset(m, 0, sizeof *m);
  m->def = *d;
  if (!(d->control_hz >= 1 && d->control_hz <= 100000)) {
    snprintf(err, err_sz, "control_hz must be in [1, 100000], got %g",
             d->control_hz);
    return -1;
  }
  if (!(d->scan_hz > 0 && d->scan_hz <= d->control_hz)) {
    snprintf(err, err_sz, "scan_hz must be in (0, control_hz], got %g",
             d->scan_hz);
    return -1;
  }
  if (!g || !g->cells || g->width == 0 || g->height == 0 ||
      !(g->resolution > 0)) {
    snprintf(err, err_sz, "the map is empty or has no resolution");
    return -1;
  }
  size_t n = (size_t)g->width * g->height;
  m->grid = *g;
  if (take) {
    take->cells = NULL; /* m->grid.cells is g's */
  } else {
    m->grid.cells = malloc(n);
    if (!m->grid.cells) {
      snprintf(err, err_sz, "out of memory for a %ux%u map", g->width,
               g->height);
      return -1;
    }
    memcpy(m->grid.cells, g->cells, n);
  }
  m->unknown_blocks = w->unknown_blocks;
  m->cos_yaw = cos(g->origin_yaw);
  m->sin_yaw = sin(g->origin_yaw);
  m->dt = 1.0 / d->control_hz;
  double tps = floor(d->control_hz / d->scan_hz + 0.5);
  m->ticks_per_scan = tps < 1 ? 1 : (uint32_t)tps;
  if (build_fields(m, err, err_sz) != 0)
    goto fail;

  pa_robot_def tmpl = pa_robot_def_default();
  robot_info_from_def(&m->robot_template, &tmpl, d);
  if (pa_sim_int_check_robot(&m->robot_template, d->max_beams, err,
                             err_sz) != 0)
    goto fail;

  m->obstacle_count0 = (uint32_t)w->obstacle_count;
  if (w->obstacle_count > d->max_obstacles) {
    snprintf(err, err_sz, "the world has %zu obstacles, max_obstacles is %u",
             w->obstacle_count, d->max_obstacles);
    goto fail;
  }
  m->obstacles0 = calloc(w->obstacle_count + 1, sizeof *m->obstacles0);
  if (!m->obstacles0)
    goto oom;
  for (size_t i = 0; i < w->obstacle_count; i++) {
    obstacle_info_from_def(&m->obstacles0[i], &w->obstacles[i]);
    if (!m->obstacles0[i].name[0])
      snprintf(m->obstacles0[i].name, sizeof m->obstacles0[i].name,
               "obstacle%zu", i);
    if (pa_sim_int_check_obstacle(&m->obstacles0[i], err, err_sz) != 0)
      goto fail;
  }
  if (pa_sim_int_agents_model(m, w) != 0)
    goto oom;

  uint32_t total = (uint32_t)w->robot_count;
  if (d->robots > total)
    total = d->robots;
  if (total > d->max_robots) {
    snprintf(err, err_sz, "%u robots requested, max_robots is %u", total,
             d->max_robots);
    goto fail;
  }
  m->robots0 = calloc(total + 1, sizeof *m->robots0);
  no_pose = calloc(total + 1, sizeof *no_pose);
  if (!m->robots0 || !no_pose)
    goto oom;
  m->beam_cap = m->robot_template.laser_beams;
  for (uint32_t i = 0; i < (uint32_t)w->robot_count; i++) {
    pa_robot_info *ri = &m->robots0[i];
    robot_info_from_def(ri, &w->robots[i], d);
    if (!ri->name[0])
      snprintf(ri->name, sizeof ri->name, "robot%u", i);
    if (pa_sim_int_check_robot(ri, d->max_beams, err, err_sz) != 0)
      goto fail;
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(m->robots0[j].name, ri->name)) {
        snprintf(err, err_sz, "two robots are named '%s'", ri->name);
        goto fail;
      }
    no_pose[i] = w->robots[i].place_near_origin;
    if (ri->laser_beams > m->beam_cap)
      m->beam_cap = ri->laser_beams;
  }
  for (uint32_t i = (uint32_t)w->robot_count; i < total; i++) {
    pa_robot_info *ri = &m->robots0[i];
    *ri = m->robot_template;
    /* Extra robots get distinct colours so a viewer or camera tells them
     * apart (robot0 keeps the template's). */
    static const uint8_t palette[][3] = {
        {220, 80, 60}, {60, 170, 90}, {230, 170, 40}, {150, 90, 200},
        {40, 170, 190}, {200, 90, 150}, {120, 120, 120}, {110, 160, 40}};
    if (i > 0) {
      const uint8_t *c = palette[(i - 1) % (sizeof palette / sizeof palette[0])];
      memcpy(ri->colour, c, 3);
    }
    snprintf(ri->name, sizeof ri->name, "robot%u", i);
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(m->robots0[j].name, ri->name))
        snprintf(ri->name, sizeof ri->name, "robot%u_%u", i, j);
    no_pose[i] = true; /* extras start by (0, 0) too */
  }
  if (pa_sim_int_place_robots(m, no_pose, total, err, err_sz) != 0)
    goto fail;
  free(no_pose);
  no_pose = NULL;
  m->robot_count0 = total;
  free(m->clear); /* placement done; the march field serves the hot paths */
  m->clear = NULL;
  return 0;
oom:
  snprintf(err, err_sz, "out of memory");
fail:
  free(no_pose);
  pa_sim_model_free(m);
  return -1;
}

void pa_sim_model_free(pa_sim_model *m) {
  if (m->cells_seg.base)
    pa_shm_detach(&m->cells_seg);
  else
    free(m->grid.cells);
  free(m->blocked);
  free(m->clear);
  free(m->march);
  pa_sim_int_faces_free(m->faces);
  free(m->robots0);
  free(m->obstacles0);
  free(m->agents0);
  memset(m, 0, sizeof *m);
}

/* ---- state ---------------------------------------------------------------- */

int pa_sim_state_init(const pa_sim_model *m, pa_sim_state *s, char *err,
                      size_t err_sz) {
  memset(s, 0, sizeof *s);
  s->cap_robots = m->def.max_robots;
  s->cap_obstacles = m->def.max_obstacles;
  size_t nr = s->cap_robots ? s->cap_robots : 1;
  size_t no = s->cap_obstacles ? s->cap_obstacles : 1;
  s->info = calloc(nr, sizeof *s->info);
  s->rs = calloc(nr, sizeof *s->rs);
  s->obs = calloc(no, sizeof *s->obs);
  s->ranges = calloc(nr * m->beam_cap, sizeof(float));
  s->scan_due = calloc(nr, sizeof *s->scan_due);
  s->scan_rec = calloc(nr, sizeof *s->scan_rec);
  s->scratch = calloc(1, sizeof *s->scratch);
  s->motion = calloc(nr, sizeof *s->motion);
  s->strips = calloc(1, sizeof *s->strips);
  if (!s->info || !s->rs || !s->obs || !s->ranges || !s->scan_due ||
      !s->scan_rec || !s->scratch || !s->motion || !s->strips ||
      pa_sim_int_strips_init(s->strips, (uint32_t)nr) != 0 ||
      pa_sim_int_dyn_init(s) != 0 || pa_sim_int_agents_init(s) != 0 ||
      pa_sim_int_scratch_init(s->scratch, m->beam_cap) != 0 ||
      pa_sim_int_hash_init(&s->hash, (uint32_t)nr) != 0 ||
      pa_sim_int_hash_init(&s->lhash, (uint32_t)nr) != 0) {
    snprintf(err, err_sz, "out of memory for %u robots", s->cap_robots);
    pa_sim_state_free(s);
    return -1;
  }
  s->threads = pa_sim_threads_resolve(m->def.threads, m->robot_count0);
  if (s->threads > 1) {
    s->pool = pa_sim_int_pool_new(m, s->threads, err, err_sz);
    if (!s->pool) {
      pa_sim_state_free(s);
      return -1;
    }
    if (pa_sim_int_late_init(s, m->beam_cap) != 0) {
      snprintf(err, err_sz, "out of memory for the scan buffers");
      pa_sim_state_free(s);
      return -1;
    }
  }
  s->paused = m->def.paused;
  s->speed = m->def.speed;
  s->ghosts = m->def.ghost_robots;
  pa_sim_reset(m, s);
  return 0;
}

void pa_sim_state_free(pa_sim_state *s) {
  pa_reply unsent; /* nobody left to answer */
  pa_sim_rec_close(s);
  while (s->rec)
    pa_sim_int_rec_collect(s, &unsent);
  pa_sim_ssl_free(s);
  pa_sim_int_pool_free(s->pool); /* stops the workers first */
  pa_sim_int_late_free(s);
  free(s->info);
  free(s->rs);
  free(s->obs);
  free(s->ranges);
  free(s->scan_due);
  free(s->scan_rec);
  if (s->scratch)
    pa_sim_int_scratch_free(s->scratch);
  free(s->scratch);
  free(s->motion);
  if (s->strips)
    pa_sim_int_strips_free(s->strips);
  free(s->strips);
  pa_sim_keep_close(s);
  pa_sim_int_dyn_free(s);
  pa_sim_int_agents_free(s);
  pa_sim_int_hash_free(&s->hash);
  pa_sim_int_hash_free(&s->lhash);
  memset(s, 0, sizeof *s);
}

void pa_sim_int_robot_place(const pa_sim_model *m, pa_sim_state *s,
                            uint32_t id, double x, double y, double theta) {
  pa_robot_state *r = &s->rs[id];
  uint32_t scan_seq = r->scan_seq;
  memset(r, 0, sizeof *r);
  r->id = id;
  r->gen = s->info[id].gen;
  r->flags = PA_RS_ACTIVE;
  r->scan_seq = scan_seq;
  r->x = r->odom_x = x;
  r->y = r->odom_y = y;
  r->theta = r->odom_theta = pa_sim_wrap(theta);
  r->rng = pa_sim_int_seed(m->def.seed, id, s->info[id].gen);
  pa_sim_int_dyn_clear(s, id);
}

/* *dst = src (a robot's or an obstacle's info from a world source), active,
 * its name terminated; with new_gens a slot's generation moves past the one
 * it had, so handles to what was there before stay stale. */
#define INSTALL_INFO(dst, src, new_gens)                                       \
  do {                                                                         \
    uint32_t gen_ = (dst)->gen;                                                \
    *(dst) = (src);                                                            \
    (dst)->active = 1;                                                         \
    (dst)->name[sizeof(dst)->name - 1] = 0;                                    \
    if ((new_gens) && gen_ > (dst)->gen)                                       \
      (dst)->gen = gen_ + 1;                                                   \
  } while (0)

void pa_sim_int_world_install(const pa_sim_model *m, pa_sim_state *s,
                              const pa_sim_world_src *w) {
  for (uint32_t i = 0; i < s->cap_robots; i++) {
    pa_robot_info *ri = &s->info[i];
    pa_robot_state *rs = &s->rs[i];
    if (i >= w->robot_count || !w->robots[i].active) {
      ri->active = 0;
      rs->flags = 0;
      continue;
    }
    INSTALL_INFO(ri, w->robots[i], w->new_gens);
    const pa_robot_state *st =
        w->states && i < w->state_count ? &w->states[i] : NULL;
    if (st && st->gen == ri->gen && (st->flags & PA_RS_ACTIVE) &&
        pa_sim_int_state_ok(st)) {
      uint32_t seq = rs->scan_seq; /* streams keep counting */
      *rs = *st;
      rs->id = i;
      rs->scan_seq = seq > st->scan_seq ? seq : st->scan_seq;
    } else {
      pa_sim_int_robot_place(m, s, i, ri->start_x, ri->start_y,
                             ri->start_theta);
    }
  }
  for (uint32_t i = 0; i < s->cap_obstacles; i++) {
    pa_obstacle_info *o = &s->obs[i];
    if (i >= w->obstacle_count || !w->obstacles[i].active) {
      o->active = 0;
      continue;
    }
    INSTALL_INFO(o, w->obstacles[i], w->new_gens);
  }
  s->robot_count =
      w->robot_count < s->cap_robots ? w->robot_count : s->cap_robots;
  s->obstacle_count = w->obstacle_count < s->cap_obstacles ? w->obstacle_count
                                                           : s->cap_obstacles;
  pa_sim_int_recount(s);        /* a world may have gaps (set_grid, removals) */
  pa_sim_int_agents_recount(s); /* a snapshot's agents move on */
  s->hash.valid = false;
  s->world_dirty = true;
}

void pa_sim_reset(const pa_sim_model *m, pa_sim_state *s) {
  pa_sim_world_src w = {.robots = m->robots0,
                        .robot_count = m->robot_count0,
                        .obstacles = m->obstacles0,
                        .obstacle_count = m->obstacle_count0,
                        .new_gens = true};
  pa_sim_int_world_install(m, s, &w);
  pa_sim_int_agents_reset(m, s); /* agents walk from their start again */
  s->scan_tick0 = s->tick;       /* scans as a fresh start does */
  pa_sim_ssl_reset(s);
}

/* Robot id of a running world clear of the walls of model m, the state's
 * obstacles and the other robots by margin. */
typedef struct state_place_ctx {
  const pa_sim_model *m;
  const pa_sim_state *s;
  uint32_t id;
} state_place_ctx;

static bool state_place_free(const void *arg, uint32_t cx, uint32_t cy,
                             double x, double y, double margin, bool probe) {
  (void)cx, (void)cy, (void)probe;
  const state_place_ctx *c = arg;
  return pa_sim_clearance(c->m, c->s, c->id, x, y, c->s->info[c->id].radius,
                          margin, NULL, NULL) >= margin;
}

static int model_prepare(const pa_sim_def *def, bool unknown_blocks,
                         const pa_world *w, const pa_grid *g, pa_grid *take,
                         pa_sim_model *nm, char *err, size_t err_sz);

int pa_sim_model_prepare(const pa_sim_def *def, bool unknown_blocks,
                         const pa_world *w, const pa_grid *g, pa_sim_model *nm,
                         char *err, size_t err_sz) {
  return model_prepare(def, unknown_blocks, w, g, NULL, nm, err, err_sz);
}

int pa_sim_int_model_prepare_take(const pa_sim_def *def, bool unknown_blocks,
                                  const pa_world *w, pa_grid *g,
                                  pa_sim_model *nm, char *err, size_t err_sz) {
  return model_prepare(def, unknown_blocks, w, g, g, nm, err, err_sz);
}

static int model_prepare(const pa_sim_def *def, bool unknown_blocks,
                         const pa_world *w, const pa_grid *g, pa_grid *take,
                         pa_sim_model *nm, char *err, size_t err_sz) {
  pa_sim_def d = *def;
  d.robots = 0; /* the world's robots (or the state's), no extras */
  pa_world none;
  if (!w) {
    memset(&none, 0, sizeof none);
    none.unknown_blocks = unknown_blocks;
    w = &none;
  }
  return model_init(nm, &d, w, g, take, err, err_sz);
}

int pa_sim_set_world(pa_sim_model *m, pa_sim_state *s, const pa_world *w,
                     const pa_grid *g, char *err, size_t err_sz) {
  pa_sim_model nm;
  if (pa_sim_model_prepare(&m->def, m->unknown_blocks, w, g, &nm, err,
                           err_sz) != 0)
    return -1;
  return pa_sim_set_world_model(m, s, &nm, err, err_sz);
}

int pa_sim_set_world_model(pa_sim_model *m, pa_sim_state *s, pa_sim_model *nm,
                           char *err, size_t err_sz) {
  pa_sim_model old;
  if (pa_sim_int_swap_world_model(m, s, nm, &old, err, err_sz) != 0)
    return -1;
  pa_sim_model_free(&old);
  return 0;
}

int pa_sim_int_swap_world_model(pa_sim_model *m, pa_sim_state *s,
                                pa_sim_model *nm, pa_sim_model *old, char *err,
                                size_t err_sz) {
  if (nm->beam_cap > m->beam_cap) {
    snprintf(err, err_sz,
             "a robot of the world has %u laser beams; this pa-sim holds at "
             "most %u (start it with a world or --laser_beams that has as "
             "many)",
             nm->beam_cap, m->beam_cap);
    pa_sim_model_free(nm);
    return -1;
  }
  nm->beam_cap = m->beam_cap; /* the state's scan buffers keep their stride */
  /* The world's robots are new to their slots: a generation above the
   * slot's (a restart tells slot reuse apart by it). */
  for (uint32_t i = 0; i < nm->robot_count0 && i < s->cap_robots; i++)
    if (nm->robots0[i].gen <= s->info[i].gen)
      nm->robots0[i].gen = s->info[i].gen + 1;
  *old = *m;
  *m = *nm;
  pa_sim_int_walls_forget(s); /* the robots' memories of the old map */
  pa_sim_reset(m, s);
  return 0;
}

int pa_sim_set_grid(pa_sim_model *m, pa_sim_state *s, const pa_grid *g,
                    uint32_t *moved, char *err, size_t err_sz) {
  pa_sim_model nm;
  if (pa_sim_model_prepare(&m->def, m->unknown_blocks, NULL, g, &nm, err,
                           err_sz) != 0)
    return -1;
  return pa_sim_set_grid_model(m, s, &nm, moved, err, err_sz);
}

int pa_sim_set_grid_model(pa_sim_model *m, pa_sim_state *s, pa_sim_model *nm,
                          uint32_t *moved, char *err, size_t err_sz) {
  pa_sim_model old;
  if (pa_sim_int_swap_grid_model(m, s, nm, moved, &old, err, err_sz) != 0)
    return -1;
  pa_sim_model_free(&old);
  return 0;
}

int pa_sim_int_swap_grid_model(pa_sim_model *m, pa_sim_state *s,
                               pa_sim_model *nm, uint32_t *moved,
                               pa_sim_model *old, char *err, size_t err_sz) {
  nm->beam_cap = m->beam_cap; /* the state's scan buffers keep their stride */
  /* Robots that no longer fit move to free places (in index order, each
   * clear of the others as they stand); all or nothing. */
  size_t nrs = (size_t)s->robot_count * sizeof *s->rs;
  pa_robot_state *keep = malloc(nrs ? nrs : 1);
  pa_robot_info *r0 = calloc(s->robot_count + 1, sizeof *r0);
  pa_obstacle_info *o0 = calloc(s->obstacle_count + 1, sizeof *o0);
  if (!keep || !r0 || !o0) {
    snprintf(err, err_sz, "out of memory");
    goto fail;
  }
  memcpy(keep, s->rs, nrs);
  uint64_t rng = pa_sim_int_seed(m->def.seed, 0x7365746d6170ull, s->tick);
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->robot_count; i++) {
    pa_robot_state *r = &s->rs[i];
    if (!s->info[i].active ||
        pa_sim_clearance(nm, s, i, r->x, r->y, s->info[i].radius, 0, NULL,
                         NULL) >= 0)
      continue;
    double x, y;
    state_place_ctx pc = {nm, s, i};
    if (!find_place(&nm->grid, &rng, state_place_free, &pc, 0.05, 0, &x, &y)) {
      memcpy(s->rs, keep, nrs);
      snprintf(err, err_sz, "no free place on the new map for robot '%s'",
               s->info[i].name);
      goto fail;
    }
    r->x = r->odom_x = x; /* as a teleport: odometry follows */
    r->y = r->odom_y = y;
    r->odom_theta = r->theta;
    r->v = r->vy = r->w = 0;
    n++;
  }
  /* The world as it stands is the new initial world (RESET). */
  for (uint32_t i = 0; i < s->robot_count; i++) {
    r0[i] = s->info[i];
    r0[i].start_x = s->rs[i].x;
    r0[i].start_y = s->rs[i].y;
    r0[i].start_theta = s->rs[i].theta;
  }
  memcpy(o0, s->obs, s->obstacle_count * sizeof *o0);
  free(nm->robots0);
  free(nm->obstacles0);
  nm->robots0 = r0;
  nm->robot_count0 = s->robot_count;
  nm->obstacles0 = o0;
  nm->obstacle_count0 = s->obstacle_count;
  free(keep);
  *old = *m;
  *m = *nm;
  pa_sim_int_walls_forget(s); /* the robots' memories of the old map */
  s->world_dirty = true;
  if (moved)
    *moved = n;
  return 0;
fail:
  free(keep);
  free(r0);
  free(o0);
  pa_sim_model_free(nm);
  return -1;
}

uint32_t pa_sim_find_robot(const pa_sim_state *s, const char *name) {
  for (uint32_t i = 0; i < s->robot_count; i++)
    if (s->info[i].active && !strcmp(s->info[i].name, name))
      return i;
  char *end = NULL;
  unsigned long v = strtoul(name, &end, 10);
  if (*name && !*end && v < s->robot_count && s->info[v].active)
    return (uint32_t)v;
  return UINT32_MAX;
}
