/* sim_ssl.h - RoboCup SSL in pa_sim: the field, the ball (sliding, rolling,
 * chips, bounces), kicks, the dribbler, 4-wheel omni drive and the
 * protocol's vector-norm limits (sim_ball.c). The ball step is a pure
 * function of the bodies it is given, so tests drive it without a world.
 * Values and their sources: docs/ssl.md. */
#ifndef PA_SIM_SSL_H
#define PA_SIM_SSL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pa_map.h"
#include "pa_ssl_field.h"

/* The ball: an SSL golf ball (rules: 42.67 mm, 45.93 g, orange). */
#define PA_SSL_BALL_RADIUS 0.021335 /* [m] */
#define PA_SSL_CONTACT_EPS                                                     \
  0.0005                         /* [m] a ball this near the bar touches it    \
                                  */
#define PA_SSL_BALL_MASS 0.04593 /* [kg] */
#define PA_SSL_GRAVITY 9.81      /* [m/s^2] */
#define PA_SSL_TEAM_IDS 16       /* robot ids 0..15 per team */
/* The height of every laser's beam plane as the ball sees it (docs/ssl.md):
 * low enough that a ball on the ground (0..42.67 mm) crosses it. */
#define PA_SSL_LASER_HEIGHT 0.02 /* [m] */

enum pa_ssl_team { PA_SSL_BLUE = 0, PA_SSL_YELLOW = 1 };

/* The field's walls as an occupancy grid (res [m/cell], origin so that
 * the field centre is at (0, 0)): boundary walls and the goals' walls,
 * which robots collide with as with any map. */
int pa_ssl_field_grid(const pa_ssl_field *f, double res, pa_grid *out,
                      char *err, size_t err_sz);

/* Ball physics parameters (defaults: pa_ssl_params_default, docs/ssl.md). */
typedef struct pa_ssl_params {
  double acc_slide;  /* [m/s^2] deceleration while sliding */
  double acc_roll;   /* [m/s^2] deceleration while rolling */
  double roll_ratio; /* sliding ends at this fraction of the speed it
                      * started with (5/7: a solid sphere) */
  double e_wall;     /* restitution, field and goal walls */
  double e_robot;    /* restitution, robot hull */
  double e_front;    /* restitution, the dribbler bar (no dribbling) */
  double e_ground;   /* vertical restitution of a landing chip */
  double rest_vz;    /* [m/s] a bounce slower than this stops (lands) */
} pa_ssl_params;
pa_ssl_params pa_ssl_params_default(void);

/* The ball. In the air while z > 0 or vz > 0. */
typedef struct pa_ssl_ball {
  double x, y, z;    /* [m] centre; z = 0 on the ground (z is the height
                      * of the bottom above the floor) */
  double vx, vy, vz; /* [m/s] */
  double v_switch;   /* [m/s] sliding while faster than this; 0 = rolling */
  int32_t holder;    /* robot slot holding it on the dribbler, -1 none */
  bool present;
} pa_ssl_ball;

/* A robot as the ball sees it (world frame). */
typedef struct pa_ssl_body {
  bool active;
  double x, y, theta;    /* [m, m, rad] */
  double vx, vy, w;      /* world-frame velocity [m/s, m/s, rad/s] */
  double radius, height; /* [m] */
} pa_ssl_body;

/* RobotLimits: norms of (vx, vy), not per axis. 0 = unlimited. */
typedef struct pa_ssl_limits {
  double acc_up, acc_brake;     /* [m/s^2] speed-up / brake, absolute */
  double acc_up_w, acc_brake_w; /* [rad/s^2] */
  double v_max;                 /* [m/s] absolute */
  double w_max;                 /* [rad/s] */
} pa_ssl_limits;

/* One robot's SSL side: specs, the held command and the kicker. */
typedef struct pa_ssl_bot {
  uint8_t team;              /* enum pa_ssl_team */
  uint8_t ssl_id;            /* 0..15 */
  bool ssl;                  /* an SSL robot (named b<id> / y<id>) */
  double mass;               /* [kg] */
  double center_to_dribbler; /* [m] the flat front's distance */
  double dribbler_width;     /* [m] 0 = the front's whole width */
  double max_kick;           /* [m/s] straight kicks; 0 = unlimited */
  double max_chip;           /* [m/s] chips; 0 = unlimited */
  double wheel_angle[4];     /* [rad] front_right, back_right, back_left,
                              * front_left; clockwise from forward */
  double wheel_dist;         /* [m] centre to each wheel's contact */
  pa_ssl_limits lim;
  /* The kicker: armed until it fires (speed 0 = off). */
  double kick_speed;   /* [m/s] absolute (3-D) */
  double kick_angle;   /* [deg] 0 = straight, > 0 = chip */
  double dribbler_rpm; /* > 0 holds a ball at the bar */
  bool ball_contact;   /* the ball touched the bar in the last tick */
  uint32_t kicks;      /* kicks fired so far */
  /* The target twist and the one the limits allow now (world frame). */
  double tx, ty, tw;
  uint32_t tframe; /* PA_FRAME_ROBOT / PA_FRAME_WORLD of tx, ty */
  double cvx, cvy, cw;
  bool driving; /* a twist was set: the limits pass it on */
  /* A team port's command (PA_SSL_HAS_TIMEOUT) and its sim time: it lapses
   * after def.ssl_cmd_timeout_ms. */
  bool cmd_lapses;  /* its kicker and dribbler */
  bool move_lapses; /* its move too (not once set another way) */
  double cmd_time;  /* [s] */
} pa_ssl_bot;
/* The default robot (docs/ssl.md): 90 mm, 150 mm high, 2.3 kg, 80 mm to
 * the bar, caps 6.5 m/s, limits and wheel angles of a typical SSL robot. */
pa_ssl_bot pa_ssl_bot_default(void);

/* Wheel speeds [m/s] (front_right, back_right, back_left, front_left; a
 * positive speed turns the robot counter-clockwise) -> body twist (forward,
 * left [m/s], angular [rad/s]) by least squares (4 equations, 3 unknowns).
 * -1 when the angles leave the twist undetermined. */
int pa_ssl_wheels_to_twist(const pa_ssl_bot *b, const double wheel[4],
                           double twist[3]);
/* The other way, exact: each wheel's speed for a body twist. */
void pa_ssl_twist_to_wheels(const pa_ssl_bot *b, const double twist[3],
                            double wheel[4]);
/* One tick of the limits: cur (vx, vy, w) moves towards target within the
 * norm limits (speed-up when the new speed is above the current one). */
void pa_ssl_limit(const pa_ssl_limits *l, const double cur[3],
                  const double target[3], double dt, double out[3]);

/* Puts the ball at (x, y, z) with a velocity; roll = already rolling. */
void pa_ssl_ball_place(pa_ssl_ball *b, double x, double y, double z, double vx,
                       double vy, double vz, bool roll);

/* One tick of the ball against the field, goals and bodies[0..n) (bots
 * the same length: their kickers fire, their dribblers hold, their
 * ball_contact is set; a body the ball bounces off takes its share of the
 * impulse by the bot's mass: its vx, vy change). Substeps so that no
 * contact is skipped. */
void pa_ssl_ball_step(const pa_ssl_field *f, const pa_ssl_params *p,
                      pa_ssl_ball *b, pa_ssl_body *bodies, pa_ssl_bot *bots,
                      uint32_t n, double dt);

/* Distance from a ball centre (bx, by) to robot body o's hull (a circle cut
 * by a flat front at c2d), with the outward normal and whether the nearest
 * point is on the front. Negative inside. */
double pa_ssl_hull_dist(const pa_ssl_body *o, double c2d, double bx, double by,
                        double *nx, double *ny, bool *front, double *front_y);

#endif
