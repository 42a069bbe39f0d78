/* json_force.c - forces on dynamic robots: OceanSim's set_force*,
 * set_body_wrench, set_body_velocity, set_thrust(ers) and step's force /
 * thrusters; RaiSim's apply_force / apply_torque.
 *
 * Inputs come in their full 3-D shapes; the world is planar (x, y, yaw), so
 * a non-zero component it cannot represent is refused by name
 * (unsupported_control_scheme), never dropped. OceanSim's frames (world: x
 * right, y forward, z up; the body frame the same carried by the robot: x to
 * its right, y ahead) map onto ours (world x, y as they are; body x ahead, y
 * to the left): world (fx, fy) -> (fx, fy); body (fx, fy) -> (fy, -fx); yaw
 * (tz, r) about z up, counter-clockwise, as ours. RaiSim's apply_* use our
 * frames as they are (both are z up, x forward in the body). */
#define _GNU_SOURCE
#include "json_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads data.key, an array of n1 or n2 numbers, and refuses a non-zero
 * component of those flagged in `planar_not` (bit i = component i) by name
 * (names[i]). 1 read, 0 absent, -1 error set. */
static int vec_planar(jctx *x, const char *key, size_t n1, size_t n2,
                      unsigned planar_not, const char *const *names,
                      double *out, size_t *n) {
  int r = pa_json_vec(x, key, n1, n2, out, n);
  if (r <= 0)
    return r;
  for (size_t i = 0; i < *n; i++)
    if ((planar_not & (1u << i)) && out[i] != 0) {
      pa_json_fail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                   "data.%s[%zu] (%s = %g): the world is planar (x, y, yaw); "
                   "%s must be 0",
                   key, i, names[i], out[i], names[i]);
      return -1;
    }
  return 1;
}

static const char *const F3[] = {"fx", "fy", "fz"};
static const char *const W6[] = {"fx", "fy", "fz", "tx", "ty", "tz"};
static const char *const V6[] = {"u", "v", "w", "p", "q", "r"};
static const char *const T3[] = {"tx", "ty", "tz"};
static const char *const P3[] = {"x", "y", "z"};

/* A force command needs a dynamic robot (pa-sim checks it again). */
static bool dynamic_robot(jctx *x, const char *what) {
  if (x->info.dynamics == PA_DYN_DYNAMIC)
    return true;
  pa_json_fail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
               "robot '%s' is kinematic: %s needs dynamics 'dynamic' (see "
               "set_property)",
               x->info.name, what);
  return false;
}

/* A held force within the robot's limits (pa-sim checks it again; a step's
 * force takes no reply of its own). */
static bool within(jctx *x, double fx, double fy, double tz) {
  double fn = hypot(fx, fy);
  if (fn > x->info.max_force * (1 + 1e-9)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "force %g N is above robot '%s' max_force %g N", fn,
                 x->info.name, (double)x->info.max_force);
    return false;
  }
  if (fabs(tz) > x->info.max_torque * (1 + 1e-9)) {
    pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                 "torque %g N m is above robot '%s' max_torque %g N m",
                 fabs(tz), x->info.name, (double)x->info.max_torque);
    return false;
  }
  return true;
}

/* Fills cmd for a held force given in OceanSim's frames (body: x right, y
 * forward). */
static void held(pa_cmd *cmd, double fx, double fy, double tz, bool body) {
  memset(cmd, 0, sizeof *cmd);
  cmd->op = PA_OP_SET_FORCE;
  cmd->force.mode = PA_FORCE_HOLD;
  cmd->force.frame = body ? PA_FRAME_ROBOT : PA_FRAME_WORLD;
  cmd->force.fx = body ? fy : fx;
  cmd->force.fy = body ? -fx : fy;
  cmd->force.tz = tz;
}

/* A held-force action: data.force (3 or 2) in the world or body frame. */
static json_t *force_action(jctx *x, bool body) {
  double f[3] = {0, 0, 0};
  size_t n = 0;
  int r = vec_planar(x, "force", 3, 2, 1u << 2, F3, f, &n);
  if (r == 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.force [fx, fy, fz] is required");
  if (r < 0 || !dynamic_robot(x, "a force") || !within(x, f[0], f[1], 0))
    return NULL;
  pa_cmd cmd;
  held(&cmd, f[0], f[1], 0, body);
  return pa_json_wait_for_sim(x, &cmd, x->idx);
}

json_t *pa_json_act_set_force(jctx *x) { return force_action(x, false); }
json_t *pa_json_act_set_force_world(jctx *x) { return force_action(x, false); }
json_t *pa_json_act_set_force_body(jctx *x) { return force_action(x, true); }

json_t *pa_json_act_set_body_wrench(jctx *x) {
  double w[6] = {0};
  size_t n = 0;
  int r = vec_planar(x, "wrench", 6, 0, (1u << 2) | (1u << 3) | (1u << 4), W6,
                     w, &n);
  if (r == 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.wrench [fx, fy, fz, tx, ty, tz] is required");
  if (r < 0 || !dynamic_robot(x, "a wrench") || !within(x, w[0], w[1], w[5]))
    return NULL;
  pa_cmd cmd;
  held(&cmd, w[0], w[1], w[5], true);
  return pa_json_wait_for_sim(x, &cmd, x->idx);
}

/* [u, v, w, p, q, r] in OceanSim's body frame: a velocity command, for
 * kinematic and dynamic robots alike. */
json_t *pa_json_act_set_body_velocity(jctx *x) {
  double v[6] = {0};
  size_t n = 0;
  int r = vec_planar(x, "velocity", 6, 0, (1u << 2) | (1u << 3) | (1u << 4), V6,
                     v, &n);
  if (r == 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.velocity [u, v, w, p, q, r] is required");
  if (r < 0)
    return NULL;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_SET_CMD;
  cmd.drive.frame = PA_FRAME_ROBOT;
  cmd.drive.v = v[1];   /* forward */
  cmd.drive.vy = -v[0]; /* to the right -> our left */
  cmd.drive.w = v[5];
  if (x->info.drive != PA_DRIVE_OMNI && cmd.drive.vy != 0)
    return pa_json_fail(x, PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
                        "robot '%s' has a differential drive: velocity[0] "
                        "(u, sideways) must be 0",
                        x->info.name);
  const char *bad = pa_cmd_drive_error(&cmd.drive);
  if (bad)
    return pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE, "%s", bad);
  return pa_json_push_nowait(x, &cmd, x->idx);
}

/* data.thrusters {name: value in [-1, 1]} into cmd (names checked against
 * the robot's). 1 read, 0 absent, -1 error set. */
static int thrusters(jctx *x, pa_cmd *cmd) {
  json_t *t = json_object_get(x->data, "thrusters");
  if (!t || json_is_null(t))
    return 0;
  if (!json_is_object(t)) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.thrusters must be an object {name: value in [-1, 1]}");
    return -1;
  }
  if (json_object_size(t) == 0) { /* it would change nothing: say so */
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.thrusters is empty: name at least one thruster "
                 "{name: value in [-1, 1]}");
    return -1;
  }
  if (!dynamic_robot(x, "thrusters"))
    return -1;
  memset(cmd, 0, sizeof *cmd);
  cmd->op = PA_OP_SET_THRUST;
  for (int k = 0; k < PA_THRUSTERS_MAX; k++)
    cmd->thrust.value[k] = NAN;
  const char *name;
  json_t *v;
  json_object_foreach(t, name, v) {
    uint32_t k = 0;
    while (k < x->info.thruster_count && k < PA_THRUSTERS_MAX &&
           strncmp(x->info.thrusters[k].name, name,
                   sizeof x->info.thrusters[k].name))
      k++;
    if (k >= x->info.thruster_count || k >= PA_THRUSTERS_MAX ||
        strlen(name) >= sizeof x->info.thrusters[k].name) {
      char have[160] = "none";
      size_t len = 0;
      for (uint32_t j = 0; j < x->info.thruster_count && j < PA_THRUSTERS_MAX;
           j++)
        len += (size_t)snprintf(
            have + len, len < sizeof have ? sizeof have - len : 0, "%s%.15s",
            j ? ", " : "", x->info.thrusters[j].name);
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                   "robot '%s' has no thruster '%.40s' (it has: %s)",
                   x->info.name, name, have);
      return -1;
    }
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(d >= -1 && d <= 1)) {
      pa_json_fail(x, PA_ERR_INVALID_ACTION_SHAPE,
                   "data.thrusters.%s must be a number in [-1, 1] (a share "
                   "of its max_force)",
                   name);
      return -1;
    }
    cmd->thrust.value[k] = d;
  }
  return 1;
}

static json_t *thrust_action(jctx *x) {
  pa_cmd cmd;
  int r = thrusters(x, &cmd);
  if (r == 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.thrusters {name: value} is required");
  return r < 0 ? NULL : pa_json_wait_for_sim(x, &cmd, x->idx);
}

json_t *pa_json_act_set_thrust(jctx *x) { return thrust_action(x); }
json_t *pa_json_act_set_thrusters(jctx *x) { return thrust_action(x); }

/* data.frame: "world" (default) or "body" (ours: x ahead, y left). */
static int frame_of(jctx *x, uint32_t *frame) {
  const char *f = NULL;
  if (pa_json_str(x, "frame", 8, &f) < 0)
    return -1;
  *frame = PA_FRAME_WORLD;
  if (f && !strcmp(f, "body"))
    *frame = PA_FRAME_ROBOT;
  else if (f && strcmp(f, "world")) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.frame must be \"world\" or \"body\"");
    return -1;
  }
  return 0;
}

/* A pulse: for data.seconds (default 0 = one tick). */
static json_t *pulse(jctx *x, pa_cmd *cmd) {
  double secs = 0;
  if (pa_json_num(x, "seconds", &secs) < 0)
    return NULL;
  cmd->op = PA_OP_SET_FORCE;
  cmd->force.mode = PA_FORCE_PULSE;
  cmd->force.seconds = secs;
  return pa_json_wait_for_sim(x, cmd, x->idx);
}

json_t *pa_json_act_apply_force(jctx *x) {
  double f[3] = {0, 0, 0}, p[3] = {0, 0, 0};
  size_t n = 0, np = 0;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  int r = vec_planar(x, "force", 3, 2, 1u << 2, F3, f, &n);
  if (r == 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.force [fx, fy, fz] is required");
  if (r < 0 || vec_planar(x, "point", 3, 2, 1u << 2, P3, p, &np) < 0 ||
      frame_of(x, &cmd.force.frame) < 0 || !dynamic_robot(x, "apply_force"))
    return NULL;
  cmd.force.fx = f[0];
  cmd.force.fy = f[1];
  cmd.force.px = p[0];
  cmd.force.py = p[1];
  return pulse(x, &cmd);
}

json_t *pa_json_act_apply_torque(jctx *x) {
  double t[3] = {0, 0, 0};
  size_t n = 0;
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  json_t *v = json_object_get(x->data, "torque");
  int r;
  if (v && json_is_number(v)) { /* a number: about z */
    r = pa_json_num(x, "torque", &t[2]);
  } else {
    r = vec_planar(x, "torque", 3, 0, 3u, T3, t, &n);
  }
  if (r == 0)
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "data.torque [tx, ty, tz] (or tz) is required");
  if (r < 0 || !dynamic_robot(x, "apply_torque"))
    return NULL;
  cmd.force.frame = PA_FRAME_WORLD;
  cmd.force.tz = t[2];
  return pulse(x, &cmd);
}

int pa_json_step_inputs(jctx *x, bool *drive) {
  static const char *const vel[] = {"v", "vx", "vy", "w", "head"};
  bool has_vel = false;
  for (size_t i = 0; i < sizeof vel / sizeof vel[0]; i++)
    if (json_object_get(x->data, vel[i]))
      has_vel = true;
  pa_cmd fcmd, tcmd;
  double f[3] = {0, 0, 0};
  size_t n = 0;
  int hf = vec_planar(x, "force", 3, 2, 1u << 2, F3, f, &n);
  if (hf < 0)
    return -1;
  int ht = thrusters(x, &tcmd);
  if (ht < 0)
    return -1;
  if ((hf || ht) && has_vel) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "step takes velocities (v, vy, w, head) or force / "
                 "thrusters, not both");
    return -1;
  }
  if (hf && (!dynamic_robot(x, "a force") || !within(x, f[0], f[1], 0)))
    return -1;
  /* Held as set_force / set_thrusters hold them, then the step (the queue
   * keeps their order). */
  json_t *d;
  if (hf) {
    held(&fcmd, f[0], f[1], 0, false);
    if (!(d = pa_json_push_nowait(x, &fcmd, x->idx)))
      return -1;
    json_decref(d);
  }
  if (ht) {
    if (!(d = pa_json_push_nowait(x, &tcmd, x->idx)))
      return -1;
    json_decref(d);
  }
  /* A dynamic robot keeps what it holds unless the step gives velocities;
   * a kinematic one gets the step's velocities (0 when absent), as
   * always. */
  *drive = !(hf || ht) && (has_vel || x->info.dynamics != PA_DYN_DYNAMIC);
  return 0;
}
