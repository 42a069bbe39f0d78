/* sim_agents.c - agents: obstacles that move on their own (constant
 * velocity, a waypoint loop, a seeded random walk, pedestrians). An agent is
 * an obstacle slot whose `agent` field names its behaviour, so the laser,
 * the robots' contacts, the world snapshot (viewer, cameras) and snapshots
 * see it as any obstacle; its behaviour's state is pa-sim's own, here.
 *
 * Each tick, before the robots, every agent in slot order picks a velocity
 * and moves only to a place where its bounding circle touches nothing (walls,
 * obstacles, robots, other agents): agents never overlap anything, and a
 * robot meeting one bumps as at any obstacle. Blocked, a constant-velocity
 * agent bounces (its velocity mirrored about the contact normal), a random
 * walker picks a new heading, a waypoint follower or a pedestrian waits.
 * Pedestrians steer by a social force (Helbing-Molnar): a pull towards the
 * next waypoint at their speed (relaxation 0.5 s) and exponential pushes
 * away from agents, robots and walls within 2 m. */
#include "pa_props.h"
#include "pa_sim.h"
#include "sim_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANDOM_TURN_S 1.0 /* a random walker's new heading every second */
#define PED_TAU 0.5       /* [s] relaxation towards the wanted velocity */
#define PED_A 3.0         /* [m/s^2] social push at contact */
#define PED_B 0.3         /* [m] its decay length */
#define PED_RANGE 2.0     /* [m] beyond this nothing pushes */
#define PED_REACHED 0.3   /* [m] a waypoint this near is reached */
#define PED_WALL                                                               \
  0.5                      /* [m] walls push from this near (the field's       \
                            * search grows with it) */
#define AGENT_SPEED_MAX 10 /* [m/s] */

/* Agents by bucket of a coarse grid, rebuilt each tick (positions move on
 * during it by at most a step: buckets as wide as a contact plus two steps
 * and the social range, searched 3 x 3, find every body that matters), and
 * the static obstacles' indices. */
struct pa_sim_agent_grid {
  double cell;
  double rmax;     /* the largest agent's bounding radius [m] */
  double slack;    /* how far an agent may have moved from its bucket [m] */
  uint32_t mask;   /* table size - 1 */
  uint32_t *start; /* [mask + 2] */
  uint32_t *items; /* [cap] agent slots by bucket */
  uint32_t *key;   /* [cap] bucket of each listed agent */
  uint32_t *fixed; /* [cap] static obstacles */
  uint32_t nfixed;
  uint32_t cap;
};
typedef struct pa_sim_agent_grid agent_grid;

int pa_sim_int_agents_init(pa_sim_state *s) {
  uint32_t cap = s->cap_obstacles ? s->cap_obstacles : 1, tab = 2;
  while (tab < 2 * cap)
    tab *= 2;
  s->agents = calloc(cap, sizeof *s->agents);
  agent_grid *g = s->agent_grid = calloc(1, sizeof *g);
  if (!s->agents || !g)
    return -1;
  g->cap = cap;
  g->mask = tab - 1;
  g->start = calloc((size_t)tab + 1, sizeof *g->start);
  g->items = calloc(cap, sizeof *g->items);
  g->key = calloc(cap, sizeof *g->key);
  g->fixed = calloc(cap, sizeof *g->fixed);
  return g->start && g->items && g->key && g->fixed ? 0 : -1;
}

void pa_sim_int_agents_free(pa_sim_state *s) {
  agent_grid *g = s->agent_grid;
  if (g) {
    free(g->start);
    free(g->items);
    free(g->key);
    free(g->fixed);
    free(g);
  }
  s->agent_grid = NULL;
  free(s->agents);
  s->agents = NULL;
}

static uint32_t bucket(const agent_grid *g, int64_t cx, int64_t cy) {
  uint64_t h = (uint64_t)cx * 0x9e3779b97f4a7c15ull ^
               (uint64_t)cy * 0xc2b2ae3d27d4eb4full;
  return (uint32_t)(h >> 32) & g->mask;
}

/* An obstacle's radius of its bounding circle. */
static double bound(const pa_obstacle_info *o) {
  return o->shape == PA_SHAPE_CIRCLE
             ? o->radius
             : 0.5 * sqrt(o->size_x * o->size_x + o->size_y * o->size_y);
}

/* The buckets as the agents stand now, and the static obstacles. */
static void grid_build(const pa_sim_model *m, pa_sim_state *s) {
  agent_grid *g = s->agent_grid;
  double rmax = 0, vmax = 0;
  g->nfixed = 0;
  for (uint32_t i = 0; i < s->obstacle_count; i++) {
    const pa_obstacle_info *o = &s->obs[i];
    if (!o->active)
      continue;
    if (o->agent == PA_AGENT_NONE) {
      g->fixed[g->nfixed++] = i;
      continue;
    }
    rmax = fmax(rmax, bound(o));
    vmax = fmax(vmax, 1.3 * s->agents[i].speed +
                          hypot(s->agents[i].vx, s->agents[i].vy));
  }
  g->cell =
      fmax(PED_RANGE + 2.0 * rmax, 2.0 * rmax + 2.0 * vmax * m->dt + 0.01);
  g->rmax = rmax;
  g->slack = vmax * m->dt + 1e-9;
  memset(g->start, 0, ((size_t)g->mask + 2) * sizeof *g->start);
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->obstacle_count; i++) {
    const pa_obstacle_info *o = &s->obs[i];
    if (!o->active || o->agent == PA_AGENT_NONE)
      continue;
    uint32_t k = bucket(g, (int64_t)floor(o->x / g->cell),
                        (int64_t)floor(o->y / g->cell));
    g->key[n++] = k;
    g->start[k + 1]++;
  }
  for (uint32_t k = 0; k <= g->mask; k++)
    g->start[k + 1] += g->start[k];
  n = 0;
  for (uint32_t i = 0; i < s->obstacle_count; i++) {
    const pa_obstacle_info *o = &s->obs[i];
    if (!o->active || o->agent == PA_AGENT_NONE)
      continue;
    g->items[g->start[g->key[n++]]++] = i;
  }
  for (uint32_t k = g->mask + 1; k > 0; k--) /* back to the starts */
    g->start[k] = g->start[k - 1];
  g->start[0] = 0;
}

/* Runs body with j = each agent in the 3 x 3 buckets around (x, y) that can
 * hold one whose centre is within reach of it now (buckets hold where they
 * stood when built: + slack), in the 3 x 3 order (a bucket aliased twice is
 * visited once). Agents in the buckets left out are beyond reach, so what
 * the body finds within reach, and in what order, is the same. */
#define FOR_NEAR_AGENTS(g, x, y, reach, j, ...)                                \
  do {                                                                         \
    int64_t cx_ = (int64_t)floor((x) / (g)->cell);                             \
    int64_t cy_ = (int64_t)floor((y) / (g)->cell);                             \
    double rr_ = (reach) + (g)->slack;                                         \
    int64_t a0_ = (int64_t)floor(((x)-rr_) / (g)->cell);                       \
    int64_t a1_ = (int64_t)floor(((x) + rr_) / (g)->cell);                     \
    int64_t b0_ = (int64_t)floor(((y)-rr_) / (g)->cell);                       \
    int64_t b1_ = (int64_t)floor(((y) + rr_) / (g)->cell);                     \
    a0_ = a0_ < cx_ - 1 ? cx_ - 1 : a0_;                                       \
    a1_ = a1_ > cx_ + 1 ? cx_ + 1 : a1_;                                       \
    b0_ = b0_ < cy_ - 1 ? cy_ - 1 : b0_;                                       \
    b1_ = b1_ > cy_ + 1 ? cy_ + 1 : b1_;                                       \
    uint32_t seen_[9];                                                         \
    int ns_ = 0;                                                               \
    for (int64_t b_ = b0_; b_ <= b1_; b_++)                                    \
      for (int64_t a_ = a0_; a_ <= a1_; a_++) {                                \
        uint32_t k_ = bucket((g), a_, b_);                                     \
        bool dup_ = false;                                                     \
        for (int q_ = 0; q_ < ns_; q_++)                                       \
          dup_ = dup_ || seen_[q_] == k_;                                      \
        if (dup_)                                                              \
          continue;                                                            \
        seen_[ns_++] = k_;                                                     \
        for (uint32_t p_ = (g)->start[k_]; p_ < (g)->start[k_ + 1]; p_++) {    \
          uint32_t j = (g)->items[p_];                                         \
          __VA_ARGS__                                                          \
        }                                                                      \
      }                                                                        \
  } while (0)

void pa_sim_int_agents_recount(pa_sim_state *s) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    n += s->obs[i].active && s->obs[i].agent != PA_AGENT_NONE;
  s->agent_count = n;
}

/* Fresh behaviour state for agent slot i from its definition. */
static void agent_start(const pa_sim_model *m, pa_sim_state *s, uint32_t i,
                        double speed, const double *wx, const double *wy,
                        uint32_t nwp) {
  pa_sim_agent *a = &s->agents[i];
  const pa_obstacle_info *o = &s->obs[i];
  memset(a, 0, sizeof *a);
  a->gen = o->gen;
  a->speed = speed;
  a->wp_count = nwp > PA_AGENT_WAYPOINTS_MAX ? PA_AGENT_WAYPOINTS_MAX : nwp;
  for (uint32_t k = 0; k < a->wp_count; k++) {
    a->wpx[k] = wx[k];
    a->wpy[k] = wy[k];
  }
  a->rng = pa_sim_int_seed(m->def.seed ^ 0x6167656e74ull, i, o->gen);
  if (o->agent == PA_AGENT_CONSTANT) {
    a->vx = speed * cos(o->theta);
    a->vy = speed * sin(o->theta);
  }
}

void pa_sim_int_agents_reset(const pa_sim_model *m, pa_sim_state *s) {
  if (!s->agents)
    return;
  for (uint32_t i = 0; i < s->obstacle_count; i++) {
    if (!s->obs[i].active || s->obs[i].agent == PA_AGENT_NONE)
      continue;
    if (i < m->obstacle_count0 && m->agents0) {
      const pa_sim_agent_def *d = &m->agents0[i];
      agent_start(m, s, i, d->speed, d->wpx, d->wpy, d->wp_count);
    } else {
      agent_start(m, s, i, 0, NULL, NULL, 0);
    }
  }
  pa_sim_int_agents_recount(s);
}

/* The clearance of agent i's bounding circle at (x, y) from walls, static
 * obstacles, robots and the other agents (the buckets'); (nx, ny) the
 * normal away from the nearest. */
static double agent_clear(const pa_sim_model *m, pa_sim_state *s, uint32_t i,
                          double x, double y, double *nx, double *ny) {
  const agent_grid *g = s->agent_grid;
  const double r = bound(&s->obs[i]);
  double bnx = 0, bny = 0;
  double best = pa_sim_int_wall_clearance(m, x, y, r + 0.05, &bnx, &bny);
  for (uint32_t k = 0; k < g->nfixed; k++) {
    const pa_obstacle_info *o = &s->obs[g->fixed[k]];
    double ex = x - o->x, ey = y - o->y, lim = best + bound(o);
    if (ex * ex + ey * ey >= lim * lim)
      continue;
    double onx, ony, d = pa_sim_int_obstacle_dist(o, x, y, &onx, &ony);
    if (d < best)
      best = d, bnx = onx, bny = ony;
  }
  for (uint32_t k = 0; k < s->robot_count; k++) {
    if (!s->info[k].active)
      continue;
    double ex = x - s->rs[k].x, ey = y - s->rs[k].y;
    double lim = best + s->info[k].radius, d2 = ex * ex + ey * ey;
    if (d2 >= lim * lim)
      continue;
    double len = sqrt(d2), d = len - s->info[k].radius;
    if (d < best)
      best = d, bnx = len > 1e-12 ? ex / len : 1,
      bny = len > 1e-12 ? ey / len : 0;
  }
  /* only a body within reach decides (blocked or not; the normal is
   * used when blocked): agents beyond best or reach + their radius cannot */
  double near = fmin(best, r + 0.05) + g->rmax;
  FOR_NEAR_AGENTS(g, x, y, near, j, {
    if (j == i)
      continue;
    const pa_obstacle_info *o = &s->obs[j];
    double ex = x - o->x, ey = y - o->y, b = bound(o);
    double lim = best + b, d2 = ex * ex + ey * ey;
    if (d2 >= lim * lim)
      continue;
    double len = sqrt(d2), d = len - b;
    if (d < best)
      best = d, bnx = len > 1e-12 ? ex / len : 1,
      bny = len > 1e-12 ? ey / len : 0;
  });
  if (nx && ny)
    *nx = bnx, *ny = bny;
  return best - r;
}

/* The social push on pedestrian i at its place. */
static void social(const pa_sim_model *m, const pa_sim_state *s, uint32_t i,
                   double *fx, double *fy) {
  const pa_obstacle_info *o = &s->obs[i];
  double r = bound(o), x = o->x, y = o->y;
  FOR_NEAR_AGENTS(s->agent_grid, x, y, PED_RANGE, j, {
    const pa_obstacle_info *q = &s->obs[j];
    if (j == i)
      continue;
    double ex = x - q->x, ey = y - q->y, d2 = ex * ex + ey * ey;
    if (d2 > PED_RANGE * PED_RANGE || d2 < 1e-18) /* hypot is slow */
      continue;
    double d = sqrt(d2);
    double f = PED_A * exp((r + bound(q) - d) / PED_B);
    *fx += f * ex / d;
    *fy += f * ey / d;
  });
  for (uint32_t j = 0; j < s->robot_count; j++) {
    if (!s->info[j].active)
      continue;
    double ex = x - s->rs[j].x, ey = y - s->rs[j].y, d2 = ex * ex + ey * ey;
    if (d2 > PED_RANGE * PED_RANGE || d2 < 1e-18)
      continue;
    double d = sqrt(d2);
    double f = PED_A * exp((r + s->info[j].radius - d) / PED_B);
    *fx += f * ex / d;
    *fy += f * ey / d;
  }
  double nx = 0, ny = 0;
  double dw = pa_sim_int_wall_clearance(m, x, y, r + PED_WALL, &nx, &ny);
  if (dw < r + PED_WALL) {
    double f = PED_A * exp((r - dw) / PED_B);
    *fx += f * nx;
    *fy += f * ny;
  }
}

/* The next waypoint when the agent is within reach of the current one. */
static void next_waypoint(pa_sim_agent *a, double x, double y, double reach) {
  if (a->wp_count && hypot(a->wpx[a->wp] - x, a->wpy[a->wp] - y) <= reach)
    a->wp = (a->wp + 1) % a->wp_count;
}

static void agent_tick(const pa_sim_model *m, pa_sim_state *s, uint32_t i) {
  pa_obstacle_info *o = &s->obs[i];
  pa_sim_agent *a = &s->agents[i];
  const double dt = m->dt;
  o->vx = o->vy = 0;    /* what it achieves this tick (get_state reports it) */
  if (a->gen != o->gen) /* an agent without a behaviour record stands */
    return;
  double vx = a->vx, vy = a->vy;
  switch (o->agent) {
  case PA_AGENT_WAYPOINTS: {
    vx = vy = 0;
    if (!a->wp_count)
      break;
    next_waypoint(a, o->x, o->y, 1e-9); /* standing on it (spawned there) */
    double ex = a->wpx[a->wp] - o->x, ey = a->wpy[a->wp] - o->y;
    double d = hypot(ex, ey), step = a->speed * dt;
    if (d <= step) { /* lands on it this tick */
      vx = ex / dt;
      vy = ey / dt;
    } else {
      vx = a->speed * ex / d;
      vy = a->speed * ey / d;
    }
    break;
  }
  case PA_AGENT_RANDOM:
    if (a->turn == 0) {
      double h = 2 * M_PI * pa_sim_rng_uniform(&a->rng);
      vx = a->speed * cos(h);
      vy = a->speed * sin(h);
      a->turn = (uint32_t)(RANDOM_TURN_S / dt + 0.5);
    }
    a->turn--;
    break;
  case PA_AGENT_PEDESTRIAN: {
    double wx = 0, wy = 0; /* the wanted velocity */
    next_waypoint(a, o->x, o->y, PED_REACHED);
    if (a->wp_count) {
      double ex = a->wpx[a->wp] - o->x, ey = a->wpy[a->wp] - o->y;
      double d = hypot(ex, ey);
      if (d > 1e-9) {
        wx = a->speed * ex / d;
        wy = a->speed * ey / d;
      }
    }
    double fx = (wx - vx) / PED_TAU, fy = (wy - vy) / PED_TAU;
    social(m, s, i, &fx, &fy);
    vx += fx * dt;
    vy += fy * dt;
    double v = hypot(vx, vy), vmax = 1.3 * a->speed;
    if (v > vmax) {
      vx *= vmax / v;
      vy *= vmax / v;
    }
    break;
  }
  default: /* constant velocity */
    break;
  }
  a->vx = vx;
  a->vy = vy;
  if (vx == 0 && vy == 0)
    return;
  double nx = 0, ny = 0;
  double x1 = o->x + vx * dt, y1 = o->y + vy * dt;
  if (agent_clear(m, s, i, x1, y1, &nx, &ny) >= 0) {
    o->x = x1;
    o->y = y1;
    o->vx = vx;
    o->vy = vy;
    if (o->agent == PA_AGENT_WAYPOINTS)
      next_waypoint(a, o->x, o->y, 1e-9);
    return;
  }
  /* Blocked: it stays this tick. */
  switch (o->agent) {
  case PA_AGENT_CONSTANT: {
    double vn = vx * nx + vy * ny;
    if (vn < 0) { /* mirrored: away from what it met */
      a->vx = vx - 2 * vn * nx;
      a->vy = vy - 2 * vn * ny;
    } else { /* the contact is ahead but not along n: turn back */
      a->vx = -vx;
      a->vy = -vy;
    }
    break;
  }
  case PA_AGENT_RANDOM:
    a->turn = 0;
    break;
  default:
    a->vx = a->vy = 0;
  }
}

void pa_sim_int_agents_step(const pa_sim_model *m, pa_sim_state *s) {
  if (!s->agent_count || !s->agents)
    return;
  grid_build(m, s);
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    if (s->obs[i].active && s->obs[i].agent != PA_AGENT_NONE)
      agent_tick(m, s, i);
  s->world_dirty = true; /* the snapshot shows where they are */
}

/* ---- ops ------------------------------------------------------------------
 */

#define fail pa_sim_int_fail

/* Waypoints "x,y x,y ..." (the command's path, terminated here: the queue
 * is another process's): their count, or -1. */
static int parse_waypoints(const char *path, double *wx, double *wy) {
  char buf[PA_CMD_PATH_MAX];
  memcpy(buf, path, sizeof buf);
  buf[sizeof buf - 1] = 0;
  const char *p = buf;
  int n = 0;
  while (*p == ' ')
    p++;
  while (*p) {
    if (n == PA_AGENT_WAYPOINTS_MAX)
      return -1;
    char *e;
    wx[n] = strtod(p, &e);
    if (e == p || *e != ',')
      return -1;
    p = e + 1;
    wy[n] = strtod(p, &e);
    if (e == p || (*e && *e != ' ') || !isfinite(wx[n]) || !isfinite(wy[n]) ||
        fabs(wx[n]) > 1e6 || fabs(wy[n]) > 1e6)
      return -1;
    n++;
    p = e;
    while (*p == ' ')
      p++;
  }
  return n;
}

static uint32_t find_agent(const pa_sim_state *s, const char *name) {
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    if (s->obs[i].active && s->obs[i].agent != PA_AGENT_NONE &&
        !strcmp(s->obs[i].name, name))
      return i;
  return UINT32_MAX;
}

static bool name_taken(const pa_sim_state *s, const char *name) {
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    if (s->obs[i].active && !strcmp(s->obs[i].name, name))
      return true;
  for (uint32_t i = 0; i < s->robot_count; i++)
    if (s->info[i].active && !strcmp(s->info[i].name, name))
      return true;
  return false;
}

pa_status pa_sim_int_op_spawn_agent(const pa_sim_model *m, pa_sim_state *s,
                                    const pa_cmd *c, pa_reply *r) {
  const pa_cmd_agent *a = &c->agent;
  const double num[7] = {a->x,      a->y,      a->theta, a->radius,
                         a->size_x, a->size_y, a->speed};
  for (int k = 0; k < 7; k++)
    if (!isfinite(num[k]) || fabs(num[k]) > 1e6)
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "agent numbers must be finite");
  if (a->behaviour == PA_AGENT_NONE || a->behaviour >= PA_AGENT_COUNT)
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "unknown behaviour %u",
                a->behaviour);
  if (a->speed < 0 || a->speed > AGENT_SPEED_MAX)
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                "agent speed %g is out of range [0, %d] m/s", a->speed,
                AGENT_SPEED_MAX);
  double wx[PA_AGENT_WAYPOINTS_MAX], wy[PA_AGENT_WAYPOINTS_MAX];
  int nwp = parse_waypoints(c->path, wx, wy);
  if (nwp < 0)
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                "waypoints must be up to %d finite [x, y] pairs",
                PA_AGENT_WAYPOINTS_MAX);
  pa_obstacle_info o;
  if (pa_sim_int_obstacle_init(&o, a->shape, a->x, a->y, a->theta, a->radius,
                               a->size_x, a->size_y, r) != PA_OK)
    return r->status;
  o.agent = a->behaviour;
  o.height = 1.7f; /* about a person */
  o.colour[0] = 230;
  o.colour[1] = 90;
  o.colour[2] = 160;
  o.colour[3] = 255;
  uint32_t slot = 0;
  while (slot < s->cap_obstacles && s->obs[slot].active)
    slot++;
  if (slot == s->cap_obstacles)
    return fail(r, PA_ERR_SPAWN_FAILED,
                "no free obstacle slot for an agent (max_obstacles %u)",
                s->cap_obstacles);
  memcpy(o.name, c->name, sizeof o.name);
  o.name[sizeof o.name - 1] = 0;
  if (!o.name[0])
    snprintf(o.name, sizeof o.name, "agent%u", slot);
  if (name_taken(s, o.name))
    return fail(r, PA_ERR_SPAWN_FAILED, "the name '%s' is taken", o.name);
  o.gen = s->obs[slot].gen + 1;
  uint32_t count = s->obstacle_count;
  s->obs[slot] = o;
  if (slot >= s->obstacle_count)
    s->obstacle_count = slot + 1;
  grid_build(m, s); /* as the world stands, the new agent in it */
  if (agent_clear(m, s, slot, o.x, o.y, NULL, NULL) < 0) {
    s->obs[slot].active = 0;
    s->obs[slot].agent = PA_AGENT_NONE;
    s->obstacle_count = count;
    return fail(r, PA_ERR_BLOCKED_POSE,
                "(%g, %g) is inside a wall or another body", o.x, o.y);
  }
  agent_start(m, s, slot, a->speed, wx, wy, (uint32_t)nwp);
  pa_sim_int_agents_recount(s);
  s->world_dirty = true;
  r->obj.id = slot;
  return PA_OK;
}

pa_status pa_sim_int_op_move_agent(const pa_sim_model *m, pa_sim_state *s,
                                   const pa_cmd *c, pa_reply *r) {
  const pa_cmd_agent *a = &c->agent;
  uint32_t i = find_agent(s, c->name);
  if (i == UINT32_MAX)
    return fail(r, PA_ERR_UNKNOWN_AGENT, "no agent named '%s'", c->name);
  pa_obstacle_info *o = &s->obs[i];
  pa_sim_agent *ag = &s->agents[i];
  const double num[4] = {a->x, a->y, a->theta, a->speed};
  for (int k = 0; k < 4; k++)
    if (!isfinite(num[k]) || fabs(num[k]) > 1e6)
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "agent numbers must be finite");
  double wx[PA_AGENT_WAYPOINTS_MAX], wy[PA_AGENT_WAYPOINTS_MAX];
  int nwp = 0;
  if (c->flags & PA_CMDF_AGENT_GOAL) {
    nwp = parse_waypoints(c->path, wx, wy);
    if (nwp <= 0)
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "a goal is 1 to %d finite [x, y] waypoints",
                  PA_AGENT_WAYPOINTS_MAX);
  }
  if ((c->flags & PA_CMDF_AGENT_SPEED) &&
      (a->speed < 0 || a->speed > AGENT_SPEED_MAX))
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                "agent speed %g is out of range [0, %d] m/s", a->speed,
                AGENT_SPEED_MAX);
  if (c->flags & PA_CMDF_AGENT_POSE)
    grid_build(m, s);
  if ((c->flags & PA_CMDF_AGENT_POSE) &&
      agent_clear(m, s, i, a->x, a->y, NULL, NULL) < 0)
    return fail(r, PA_ERR_BLOCKED_POSE,
                "(%g, %g) is inside a wall or another body", a->x, a->y);
  if (ag->gen != o->gen) /* no behaviour record (a loaded snapshot) */
    agent_start(m, s, i, 0, NULL, NULL, 0);
  if (c->flags & PA_CMDF_AGENT_POSE) {
    o->x = a->x;
    o->y = a->y;
    o->theta = pa_sim_wrap(a->theta);
    s->world_dirty = true;
  }
  if (c->flags & PA_CMDF_AGENT_GOAL) {
    ag->wp_count = (uint32_t)nwp;
    ag->wp = 0;
    for (int k = 0; k < nwp; k++) {
      ag->wpx[k] = wx[k];
      ag->wpy[k] = wy[k];
    }
  }
  if (c->flags & PA_CMDF_AGENT_SPEED) {
    ag->speed = a->speed;
    double h = (c->flags & PA_CMDF_AGENT_POSE) ? o->theta : a->theta;
    if (o->agent == PA_AGENT_CONSTANT) {
      ag->vx = a->speed * cos(h);
      ag->vy = a->speed * sin(h);
    }
  }
  r->obj.id = i;
  return PA_OK;
}

pa_status pa_sim_int_op_remove_agent(const pa_sim_model *m, pa_sim_state *s,
                                     const pa_cmd *c, pa_reply *r) {
  (void)m;
  uint32_t i = find_agent(s, c->name);
  if (i == UINT32_MAX)
    return fail(r, PA_ERR_UNKNOWN_AGENT, "no agent named '%s'", c->name);
  s->obs[i].active = 0;
  s->obs[i].agent = PA_AGENT_NONE;
  pa_sim_int_recount(s);
  pa_sim_int_agents_recount(s);
  s->world_dirty = true;
  r->obj.id = i;
  return PA_OK;
}

pa_status pa_sim_int_op_clear_agents(const pa_sim_model *m, pa_sim_state *s,
                                     const pa_cmd *c, pa_reply *r) {
  (void)m, (void)c;
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    if (s->obs[i].active && s->obs[i].agent != PA_AGENT_NONE) {
      s->obs[i].active = 0;
      s->obs[i].agent = PA_AGENT_NONE;
      n++;
    }
  pa_sim_int_recount(s);
  pa_sim_int_agents_recount(s);
  s->world_dirty = true;
  r->obj.id = n;
  return PA_OK;
}

/* A world file's agent definitions into the model (speed, waypoints by
 * obstacle index). */
int pa_sim_int_agents_model(pa_sim_model *m, const pa_world *w) {
  m->agents0 = NULL;
  bool any = false;
  for (size_t i = 0; i < w->obstacle_count; i++)
    any = any || w->obstacles[i].agent != 0;
  if (!any)
    return 0;
  m->agents0 = calloc(w->obstacle_count, sizeof *m->agents0);
  if (!m->agents0)
    return -1;
  for (size_t i = 0; i < w->obstacle_count; i++) {
    const pa_obstacle_def *od = &w->obstacles[i];
    pa_sim_agent_def *d = &m->agents0[i];
    d->speed = od->speed;
    /* As many as were copied: a world built in-process is not the parser's. */
    d->wp_count = od->waypoint_count < PA_AGENT_WAYPOINTS_MAX
                      ? (uint32_t)od->waypoint_count
                      : PA_AGENT_WAYPOINTS_MAX;
    for (uint32_t k = 0; k < d->wp_count; k++) {
      d->wpx[k] = od->waypoints[k][0];
      d->wpy[k] = od->waypoints[k][1];
    }
  }
  return 0;
}
