/* sim_dyn.c - dynamic bodies: a robot with dynamics "dynamic" is a free
 * planar rigid body (x, y, yaw) moved by forces and torques. Its inputs are
 * held forces (SET_FORCE), thrusters (SET_THRUST), pulses (apply_force /
 * apply_torque) and, for velocity commands, a velocity controller bounded by
 * its max_force / max_torque.
 *
 * Integration, per tick of length dt, with the net force F and torque T
 * held constant over the tick (world frame; body-frame inputs are turned at
 * the heading the tick starts with) and linear damping c, mass m: the exact
 * solution of m dv/dt = F - c v, per axis:
 *   v(dt) = F/c + (v0 - F/c) e^(-c dt / m)
 *   x(dt) = F/c dt + (v0 - F/c) (m / c) (1 - e^(-c dt / m))
 * (c = 0: the constant-acceleration parabola); the same for the yaw rate
 * with inertia, angular damping and torque. Contacts are the kinematic
 * robots' (sim_step.c move_disc): the body slides along what it touches and
 * keeps only the velocity it achieved (no restitution, no friction). */
#include "pa_props.h"
#include "pa_sim.h"
#include "sim_int.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PULSE_LIMIT 1e6        /* [N], [N m] of one pulse */
#define PULSE_SECONDS_MAX 3600 /* longest pulse [s] */

int pa_sim_int_dyn_init(pa_sim_state *s) {
  s->dyn = calloc(s->cap_robots ? s->cap_robots : 1, sizeof *s->dyn);
  return s->dyn ? 0 : -1;
}

void pa_sim_int_dyn_free(pa_sim_state *s) {
  free(s->dyn);
  s->dyn = NULL;
}

/* Robot id's inputs, emptied when they belong to an earlier robot. */
static pa_sim_dyn *dyn_of(pa_sim_state *s, uint32_t id) {
  pa_sim_dyn *d = &s->dyn[id];
  if (d->gen != s->info[id].gen) {
    memset(d, 0, sizeof *d);
    d->gen = s->info[id].gen;
  }
  return d;
}

/* Whether a record holds any input (anything but its gen is non-zero). An
 * empty record reads as emptied whatever its gen, so the calls below leave
 * it unwritten: the 880 bytes a robot of most worlds never uses stay
 * untouched zero pages of the calloc (0.9 MB resident at 1000 robots when
 * every robot's add and velocity command wrote its record, issue 37). */
static bool dyn_held(const pa_sim_dyn *d) {
  static const pa_sim_dyn zero;
  size_t off = offsetof(pa_sim_dyn, gen) + sizeof d->gen;
  return memcmp((const char *)d + off, (const char *)&zero + off,
                sizeof *d - off) != 0;
}

void pa_sim_int_dyn_clear(pa_sim_state *s, uint32_t id) {
  if (s->dyn && dyn_held(&s->dyn[id])) {
    memset(&s->dyn[id], 0, sizeof s->dyn[id]);
    s->dyn[id].gen = s->info[id].gen;
  }
}

void pa_sim_int_dyn_velocity(pa_sim_state *s, uint32_t id) {
  if (!s->dyn || !dyn_held(&s->dyn[id]))
    return; /* nothing to release */
  pa_sim_dyn *d = dyn_of(s, id);
  d->forced = false;
  d->fx = d->fy = d->tz = 0;
  memset(d->thrust, 0, sizeof d->thrust);
}

bool pa_sim_int_dyn_forced(pa_sim_state *s, uint32_t id) {
  return s->dyn && s->dyn[id].gen == s->info[id].gen && s->dyn[id].forced;
}

/* The open-loop inputs (held force, thrusters, pulses) as a world-frame
 * force and a torque, at heading (c0, s0). */
static void open_loop(const pa_robot_info *ri, const pa_sim_dyn *d, double c0,
                      double s0, double *fx, double *fy, double *tz) {
  double bx = 0, by = 0, t = 0; /* body frame */
  double wx = 0, wy = 0;        /* world frame */
  if (d->forced) {
    if (d->frame == PA_FRAME_WORLD) {
      wx += d->fx;
      wy += d->fy;
    } else {
      bx += d->fx;
      by += d->fy;
    }
    t += d->tz;
    for (uint32_t k = 0; k < ri->thruster_count && k < PA_THRUSTERS_MAX; k++) {
      const pa_thruster *th = &ri->thrusters[k];
      double f = d->thrust[k] * th->max_force;
      double ux = f * cos(th->dir), uy = f * sin(th->dir);
      bx += ux;
      by += uy;
      t += th->x * uy - th->y * ux;
    }
  }
  for (uint32_t k = 0; k < d->pulses; k++) {
    const dyn_pulse *p = &d->pulse[k];
    double pbx = p->fx, pby = p->fy; /* in the body frame for its torque */
    if (p->frame == PA_FRAME_WORLD) {
      wx += p->fx;
      wy += p->fy;
      pbx = c0 * p->fx + s0 * p->fy;
      pby = -s0 * p->fx + c0 * p->fy;
    } else {
      bx += p->fx;
      by += p->fy;
    }
    t += p->tz + p->px * pby - p->py * pbx;
  }
  *fx = wx + c0 * bx - s0 * by;
  *fy = wy + s0 * bx + c0 * by;
  *tz = t;
}

/* One axis of m dv/dt = f - c v over dt: the velocity at the end and the
 * distance covered. */
static void axis(double m, double c, double f, double v0, double dt, double *v1,
                 double *dist) {
  double k = c / m;
  if (k * dt < 1e-12) {
    double a = f / m;
    *v1 = v0 + a * dt;
    *dist = v0 * dt + 0.5 * a * dt * dt;
    return;
  }
  double e = exp(-k * dt), vinf = f / c;
  *v1 = vinf + (v0 - vinf) * e;
  *dist = vinf * dt + (v0 - vinf) * (1 - e) / k;
}

/* The force along one axis that takes v0 to v1 in dt (the inverse of
 * axis()). */
static double force_for(double m, double c, double v0, double v1, double dt) {
  double k = c / m;
  if (k * dt < 1e-12)
    return m * (v1 - v0) / dt;
  double e = exp(-k * dt);
  return c * (v1 - v0 * e) / (1 - e);
}

static double clampd(double v, double lim) {
  return v > lim ? lim : v < -lim ? -lim : v;
}

double pa_sim_int_dyn_speed_bound(const pa_sim_model *m, pa_sim_state *s,
                                  uint32_t id) {
  const pa_robot_info *ri = &s->info[id];
  const pa_robot_state *r = &s->rs[id];
  pa_sim_dyn *d = dyn_of(s, id);
  double fx, fy, tz;
  open_loop(ri, d, cos(r->theta), sin(r->theta), &fx, &fy, &tz);
  /* |v| grows at most by |F| / m per second (damping only slows it). */
  double f = sqrt(fx * fx + fy * fy) + (d->forced ? 0 : ri->max_force);
  return fabs(r->v) + fabs(r->vy) + f / ri->mass * m->dt * 1.01 + 1e-9;
}

void pa_sim_int_dyn_plan(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
                         pa_sim_motion *mv) {
  const pa_robot_info *ri = &s->info[id];
  pa_robot_state *r = &s->rs[id];
  pa_sim_dyn *d = dyn_of(s, id);
  const double dt = m->dt;
  const double th0 = r->theta, c0 = cos(th0), s0 = sin(th0);
  const double mass = ri->mass, inertia = ri->inertia;
  const double cl = ri->lin_damping, ca = ri->ang_damping;
  /* World-frame velocity now. */
  double vx0 = c0 * r->v - s0 * r->vy, vy0 = s0 * r->v + c0 * r->vy;
  double w0 = r->w;

  double fx, fy, tz, vx1, vy1, w1, dx, dy, dth;
  open_loop(ri, d, c0, s0, &fx, &fy, &tz);
  if (!d->forced) /* the controller's torque: the limited target's */
    tz +=
        clampd(force_for(inertia, ca, w0, clampd(r->cmd_w, ri->max_w), dt) - tz,
               ri->max_torque);
  axis(inertia, ca, tz, w0, dt, &w1, &dth);
  const double th1 = th0 + dth, c1 = cos(th1), s1 = sin(th1);
  if (!d->forced) {
    /* The controller's force: the one that reaches the limited target (in
     * the frame of the heading the tick ends with) in this tick, within
     * max_force (its direction kept), on top of any pulse. */
    double wtx, wty; /* world-frame target */
    if (ri->drive == PA_DRIVE_OMNI && r->cmd_frame == PA_FRAME_WORLD) {
      double bx = c1 * r->cmd_v + s1 * r->cmd_vy;
      double by = -s1 * r->cmd_v + c1 * r->cmd_vy;
      bx = clampd(bx, ri->max_v);
      by = clampd(by, ri->max_vy);
      wtx = c1 * bx - s1 * by;
      wty = s1 * bx + c1 * by;
    } else {
      double tvx = clampd(r->cmd_v, ri->max_v);
      double tvy =
          ri->drive == PA_DRIVE_OMNI ? clampd(r->cmd_vy, ri->max_vy) : 0;
      wtx = c1 * tvx - s1 * tvy;
      wty = s1 * tvx + c1 * tvy;
    }
    double ux = force_for(mass, cl, vx0, wtx, dt) - fx;
    double uy = force_for(mass, cl, vy0, wty, dt) - fy;
    double un = sqrt(ux * ux + uy * uy);
    if (un > ri->max_force) {
      ux *= ri->max_force / un;
      uy *= ri->max_force / un;
    }
    fx += ux;
    fy += uy;
  }
  axis(mass, cl, fx, vx0, dt, &vx1, &dx);
  axis(mass, cl, fy, vy0, dt, &vy1, &dy);

  /* Pulses count down by the tick. */
  uint32_t n = 0;
  for (uint32_t k = 0; k < d->pulses; k++)
    if (--d->pulse[k].ticks_left > 0)
      d->pulse[n++] = d->pulse[k];
  d->pulses = n;

  /* Head as a kinematic robot's. */
  double hr = clampd(r->cmd_head, ri->max_head_rate);
  double head = clampd(r->head + hr * dt, ri->head_limit);
  r->head_rate = (head - r->head) / dt;
  r->head = head;

  /* The velocities the step reports are body-frame at the new heading. */
  mv->dx = dx;
  mv->dy = dy;
  mv->v = c1 * vx1 + s1 * vy1;
  mv->vy = -s1 * vx1 + c1 * vy1;
  mv->w = w1;
  mv->th0 = th0;
  mv->dth = dth;
  mv->c0 = c0;
  mv->s0 = s0;
}

/* ---- ops ------------------------------------------------------------------
 */

#define fail pa_sim_int_fail

static pa_status need_dynamic(const pa_sim_state *s, uint32_t id,
                              const char *what, pa_reply *r) {
  const pa_robot_info *ri = &s->info[id];
  if (ri->dynamics != PA_DYN_DYNAMIC)
    return fail(r, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                "robot '%s' is kinematic: %s needs dynamics 'dynamic'",
                ri->name, what);
  return PA_OK;
}

pa_status pa_sim_int_op_set_force(const pa_sim_model *m, pa_sim_state *s,
                                  const pa_cmd *c, pa_reply *r) {
  const pa_cmd_force *f = &c->force;
  const pa_robot_info *ri = &s->info[c->robot];
  if (need_dynamic(s, c->robot, "a force", r) != PA_OK)
    return (pa_status)r->status;
  const double a[6] = {f->fx, f->fy, f->tz, f->px, f->py, f->seconds};
  for (int i = 0; i < 6; i++)
    if (!isfinite(a[i]))
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "force, torque, point and seconds must be finite");
  if (f->frame != PA_FRAME_ROBOT && f->frame != PA_FRAME_WORLD)
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "unknown force frame %u",
                f->frame);
  double fn = hypot(f->fx, f->fy);
  if (f->mode == PA_FORCE_HOLD) {
    if (fn > ri->max_force * (1 + 1e-9))
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "force %g N is above robot '%s' max_force %g N", fn, ri->name,
                  (double)ri->max_force);
    if (fabs(f->tz) > ri->max_torque * (1 + 1e-9))
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "torque %g N m is above robot '%s' max_torque %g N m",
                  fabs(f->tz), ri->name, (double)ri->max_torque);
    pa_sim_dyn *d = dyn_of(s, c->robot);
    d->forced = true;
    d->fx = f->fx;
    d->fy = f->fy;
    d->tz = f->tz;
    d->frame = f->frame;
    /* A force command stops a velocity command's pull. */
    s->rs[c->robot].cmd_v = s->rs[c->robot].cmd_vy = 0;
    s->rs[c->robot].cmd_w = 0;
  } else if (f->mode == PA_FORCE_PULSE) {
    if (fn > PULSE_LIMIT || fabs(f->tz) > PULSE_LIMIT || fabs(f->px) > 100 ||
        fabs(f->py) > 100)
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "apply_force: force and torque within %g, point within 100 "
                  "m",
                  PULSE_LIMIT);
    if (f->seconds < 0 || f->seconds > PULSE_SECONDS_MAX)
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "apply_force: seconds must be in [0, %d]", PULSE_SECONDS_MAX);
    pa_sim_dyn *d = dyn_of(s, c->robot);
    if (d->pulses == PA_SIM_PULSES_MAX)
      return fail(r, PA_ERR_BUSY, "robot '%s' has %d forces applied already",
                  ri->name, PA_SIM_PULSES_MAX);
    double t = floor(f->seconds / m->dt + 0.5);
    dyn_pulse *p = &d->pulse[d->pulses++];
    p->fx = f->fx;
    p->fy = f->fy;
    p->tz = f->tz;
    p->px = f->px;
    p->py = f->py;
    p->frame = f->frame;
    p->ticks_left = t < 1 ? 1 : (uint32_t)t;
  } else {
    return fail(r, PA_ERR_INVALID_ACTION_SHAPE, "unknown force mode %u",
                f->mode);
  }
  pa_sim_int_reply_pose(r, s, c->robot);
  return PA_OK;
}

pa_status pa_sim_int_op_set_thrust(const pa_sim_model *m, pa_sim_state *s,
                                   const pa_cmd *c, pa_reply *r) {
  (void)m;
  const pa_robot_info *ri = &s->info[c->robot];
  if (need_dynamic(s, c->robot, "thrusters", r) != PA_OK)
    return (pa_status)r->status;
  for (uint32_t k = 0; k < PA_THRUSTERS_MAX; k++) {
    double v = c->thrust.value[k];
    if (isnan(v))
      continue;
    if (k >= ri->thruster_count)
      return fail(r, PA_ERR_INVALID_MESSAGE, "robot '%s' has no thruster %u",
                  ri->name, k);
    if (!(v >= -1 && v <= 1))
      return fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                  "thruster '%s' value %g is out of range [-1, 1]",
                  ri->thrusters[k].name, v);
  }
  pa_sim_dyn *d = dyn_of(s, c->robot);
  if (!d->forced) { /* from the controller: no held force yet */
    d->fx = d->fy = d->tz = 0;
    d->frame = PA_FRAME_WORLD;
  }
  d->forced = true;
  for (uint32_t k = 0; k < PA_THRUSTERS_MAX; k++)
    if (!isnan(c->thrust.value[k]))
      d->thrust[k] = c->thrust.value[k];
  s->rs[c->robot].cmd_v = s->rs[c->robot].cmd_vy = 0;
  s->rs[c->robot].cmd_w = 0;
  pa_sim_int_reply_pose(r, s, c->robot);
  return PA_OK;
}

/* The dynamic-body checks of a robot's info (snapshots, adopted worlds). */
const char *pa_sim_int_dyn_check(const pa_robot_info *ri) {
  if (ri->dynamics != PA_DYN_KINEMATIC && ri->dynamics != PA_DYN_DYNAMIC)
    return "dynamics must be kinematic or dynamic";
  /* mass, inertia, damping and limits: their rows' ranges, checked with
   * every property's (pa_sim_int_check_robot) */
  if (ri->thruster_count > PA_THRUSTERS_MAX)
    return "too many thrusters";
  /* The world file's bounds: a NaN here would reach every tick's forces. */
  for (uint32_t k = 0; k < ri->thruster_count; k++) {
    const pa_thruster *th = &ri->thrusters[k];
    if (!(fabsf(th->x) <= 100 && fabsf(th->y) <= 100 && fabsf(th->dir) <= 10 &&
          pa_prop_ok_float(PA_PR_MAX_FORCE, th->max_force)))
      return "thruster position within 100 m, direction within 10 rad and "
             "max_force in range";
  }
  return NULL;
}
