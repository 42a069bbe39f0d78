/* ssl_realism.c - SimulatorConfig.realism_config: vision noise, dropout
 * and processing time from playarea.RealismConfig (playarea_ssl.proto) or
 * ER-Force's RealismConfigErForce (the fields that map onto them; any
 * other field set to something but its neutral value is refused by name).
 * All of a message's entries apply, or none (docs/ssl.md). */
#define _GNU_SOURCE
#include "ssl_int.h"

#include <stdio.h>
#include <string.h>

#include "google/protobuf/any.pb-c.h"
#include "playarea_ssl.pb-c.h"
#include "ssl_simulation_config.pb-c.h"
#include "ssl_simulation_custom_erforce_realism.pb-c.h"

/* What the entries ask for, applied only when all are accepted. */
typedef struct realism_want {
  double pos, theta, drop, ball, ball_drop, proc, delay;
  uint64_t seed;
  bool seeded;
} realism_want;

static void playarea_realism(const Playarea__RealismConfig *m,
                             realism_want *w) {
  if (m->has_position_noise)
    w->pos = w->ball = m->position_noise;
  if (m->has_orientation_noise)
    w->theta = m->orientation_noise;
  if (m->has_dropout)
    w->drop = w->ball_drop = m->dropout;
  if (m->has_seed) {
    w->seed = m->seed;
    w->seeded = true;
  }
}

/* The name of the first field playarea cannot honour, or NULL. */
static const char *erforce_refused(const RealismConfigErForce *m) {
  if (m->has_stddev_ball_area && m->stddev_ball_area != 0)
    return "stddev_ball_area";
  if (m->has_enable_invisible_ball && m->enable_invisible_ball)
    return "enable_invisible_ball";
  if (m->has_ball_visibility_threshold && m->ball_visibility_threshold != 0)
    return "ball_visibility_threshold";
  if (m->has_camera_overlap && m->camera_overlap != 0)
    return "camera_overlap";
  if (m->has_dribbler_ball_detections && m->dribbler_ball_detections != 0)
    return "dribbler_ball_detections";
  if (m->has_camera_position_error && m->camera_position_error != 0)
    return "camera_position_error";
  if (m->has_robot_command_loss && m->robot_command_loss != 0)
    return "robot_command_loss";
  if (m->has_robot_response_loss && m->robot_response_loss != 0)
    return "robot_response_loss";
  if (m->has_simulate_dribbling && !m->simulate_dribbling)
    return "simulate_dribbling";
  return NULL;
}

static void erforce_realism(const RealismConfigErForce *m, realism_want *w) {
  if (m->has_stddev_robot_p)
    w->pos = m->stddev_robot_p;
  if (m->has_stddev_robot_phi)
    w->theta = m->stddev_robot_phi;
  if (m->has_stddev_ball_p)
    w->ball = m->stddev_ball_p;
  if (m->has_missing_ball_detections)
    w->ball_drop = m->missing_ball_detections;
  if (m->has_vision_processing_time)
    w->proc = (double)m->vision_processing_time * 1e-9;
  if (m->has_vision_delay)
    w->delay = (double)m->vision_delay * 1e-9;
}

/* One custom entry into w: false with the error in e. */
static bool realism_entry(const Google__Protobuf__Any *any, realism_want *w,
                          ssl_errs *e) {
  const char *url = any->type_url ? any->type_url : "";
  if (pa_ssl_any_is(url, "RealismConfig", "playarea")) {
    Playarea__RealismConfig *m =
        playarea__realism_config__unpack(NULL, any->value.len, any->value.data);
    if (m) {
      playarea_realism(m, w);
      playarea__realism_config__free_unpacked(m, NULL);
      return true;
    }
  } else if (pa_ssl_any_is(url, "RealismConfigErForce", "sslsim")) {
    RealismConfigErForce *m =
        realism_config_er_force__unpack(NULL, any->value.len, any->value.data);
    if (m) {
      const char *no = erforce_refused(m);
      if (!no)
        erforce_realism(m, w);
      realism_config_er_force__free_unpacked(m, NULL);
      if (no) {
        char code[64];
        snprintf(code, sizeof code, "unsupported:realism_config.custom.%s", no);
        pa_ssl_err_add(e, code,
                       "RealismConfigErForce.%s is not supported (playarea "
                       "maps stddev_ball_p, stddev_robot_p, stddev_robot_phi, "
                       "missing_ball_detections, vision_delay, "
                       "vision_processing_time; nothing applied)",
                       no);
        return false;
      }
      return true;
    }
  }
  pa_ssl_err_add(e, "unsupported:config.realism_config.custom",
                 "realism_config.custom '%.80s' is not supported (only "
                 "playarea.RealismConfig and RealismConfigErForce; nothing "
                 "applied)",
                 url);
  return false;
}

static bool in(double v, double lo, double hi) { return v >= lo && v <= hi; }

void pa_ssl_realism(pa_ssl_gw *x, const RealismConfig *rc, ssl_errs *e) {
  realism_want w = {.pos = x->noise_pos,
                    .theta = x->noise_theta,
                    .drop = x->dropout,
                    .ball = x->noise_ball,
                    .ball_drop = x->ball_dropout,
                    .proc = x->proc_time,
                    .delay = x->delay};
  for (size_t k = 0; k < rc->n_custom; k++)
    if (!realism_entry(rc->custom[k], &w, e))
      return;
  if (!in(w.pos, 0, 10) || !in(w.ball, 0, 10) || !in(w.theta, 0, 10) ||
      !in(w.drop, 0, 1) || !in(w.ball_drop, 0, 1) || !in(w.proc, 0, 1) ||
      !in(w.delay, 0, 1)) {
    pa_ssl_err_add(e, "invalid:config.realism_config",
                   "position noises 0..10 m, orientation noise 0..10 rad, "
                   "dropouts 0..1, processing time and delay 0..1 s (nothing "
                   "applied)");
    return;
  }
  x->noise_pos = w.pos;
  x->noise_theta = w.theta;
  x->dropout = w.drop;
  x->noise_ball = w.ball;
  x->ball_dropout = w.ball_drop;
  x->proc_time = w.proc;
  x->delay = w.delay;
  if (w.seeded)
    x->rng = w.seed;
}
