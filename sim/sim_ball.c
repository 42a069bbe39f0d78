/* sim_ball.c - the SSL field, the ball and what acts on it: friction
 * (sliding, then rolling), chips in z, bounces off walls, goals and robot
 * hulls, kicks and the dribbler; and the robots' 4-wheel omni drive and
 * norm limits. Values and their sources: docs/ssl.md. */
#include "sim_ssl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pa_shm.h"

/* Marks the cells whose centres lie in [x0, x1] x [y0, y1] grown by half a
 * cell (a wall thinner than a cell still blocks). */
static void fill_rect(pa_grid *g, double x0, double y0, double x1, double y1) {
  double h = g->resolution / 2;
  for (uint32_t cy = 0; cy < g->height; cy++) {
    double y = g->origin_y + (cy + 0.5) * g->resolution;
    if (y < y0 - h || y > y1 + h)
      continue;
    for (uint32_t cx = 0; cx < g->width; cx++) {
      double x = g->origin_x + (cx + 0.5) * g->resolution;
      if (x >= x0 - h && x <= x1 + h)
        g->cells[(size_t)cy * g->width + cx] = PA_CELL_OCCUPIED;
    }
  }
}

int pa_ssl_field_grid(const pa_ssl_field *f, double res, pa_grid *out,
                      char *err, size_t err_sz) {
  memset(out, 0, sizeof *out);
  if (!(res >= 0.005 && res <= 0.1)) {
    snprintf(err, err_sz, "ssl field: resolution %g outside 0.005..0.1 m", res);
    return -1;
  }
  const double frame = 2 * res; /* the boundary walls' thickness */
  double hx = f->length / 2 + f->boundary, hy = f->width / 2 + f->boundary;
  out->width = (uint32_t)ceil(2 * (hx + frame) / res);
  out->height = (uint32_t)ceil(2 * (hy + frame) / res);
  out->resolution = res;
  out->origin_x = -(double)out->width * res / 2;
  out->origin_y = -(double)out->height * res / 2;
  out->occupied_min = PA_CELL_OCCUPIED;
  out->cells = calloc((size_t)out->width * out->height, 1);
  if (!out->cells) {
    snprintf(err, err_sz, "ssl field: out of memory");
    return -1;
  }
  double ex = -out->origin_x, ey = -out->origin_y;
  fill_rect(out, -ex, -ey, ex, -hy - res / 2);
  fill_rect(out, -ex, hy + res / 2, ex, ey);
  fill_rect(out, -ex, -ey, -hx - res / 2, ey);
  fill_rect(out, hx + res / 2, -ey, ex, ey);
  for (int side = -1; side <= 1; side += 2) {
    double x0 = f->length / 2, x1 = x0 + f->goal_depth + f->goal_wall;
    double gy = f->goal_width / 2, t = f->goal_wall;
    double bx = f->length / 2 + f->goal_depth;
    if (side < 0) {
      fill_rect(out, -x1, gy, -x0, gy + t);
      fill_rect(out, -x1, -gy - t, -x0, -gy);
      fill_rect(out, -bx - t, -gy - t, -bx, gy + t);
    } else {
      fill_rect(out, x0, gy, x1, gy + t);
      fill_rect(out, x0, -gy - t, x1, -gy);
      fill_rect(out, bx, -gy - t, bx + t, gy + t);
    }
  }
  return 0;
}

pa_ssl_params pa_ssl_params_default(void) {
  return (pa_ssl_params){.acc_slide = PA_SSL_ACC_SLIDE,
                         .acc_roll = PA_SSL_ACC_ROLL,
                         .roll_ratio = PA_SSL_ROLL_RATIO,
                         .e_wall = 0.6,
                         .e_robot = 0.5,
                         .e_front = 0.2,
                         .e_ground = 0.5,
                         .rest_vz = 0.2};
}

pa_ssl_bot pa_ssl_bot_default(void) {
  const double deg = M_PI / 180;
  return (pa_ssl_bot){
      .mass = 2.3,
      .center_to_dribbler = 0.08,
      .max_kick = 6.5,
      .max_chip = 6.5,
      .wheel_angle = {60 * deg, 135 * deg, 225 * deg, 300 * deg},
      .wheel_dist = 0.08,
      .lim = {.acc_up = 4.0,
              .acc_brake = 6.0,
              .acc_up_w = 30.0,
              .acc_brake_w = 50.0,
              .v_max = 3.5,
              .w_max = 10.0},
  };
}

/* Wheel i's row of the drive: its speed = J[i] . (forward, left, w). */
static void wheel_row(const pa_ssl_bot *b, int i, double j[3]) {
  j[0] = sin(b->wheel_angle[i]);
  j[1] = cos(b->wheel_angle[i]);
  j[2] = b->wheel_dist;
}

void pa_ssl_twist_to_wheels(const pa_ssl_bot *b, const double twist[3],
                            double wheel[4]) {
  for (int i = 0; i < 4; i++) {
    double j[3];
    wheel_row(b, i, j);
    wheel[i] = j[0] * twist[0] + j[1] * twist[1] + j[2] * twist[2];
  }
}

int pa_ssl_wheels_to_twist(const pa_ssl_bot *b, const double wheel[4],
                           double twist[3]) {
  /* Normal equations (J^T J) t = J^T u, solved with partial pivoting. */
  double a[3][4] = {{0}};
  for (int i = 0; i < 4; i++) {
    double j[3];
    wheel_row(b, i, j);
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++)
        a[r][c] += j[r] * j[c];
      a[r][3] += j[r] * wheel[i];
    }
  }
  for (int c = 0; c < 3; c++) {
    int p = c;
    for (int r = c + 1; r < 3; r++)
      if (fabs(a[r][c]) > fabs(a[p][c]))
        p = r;
    if (fabs(a[p][c]) < 1e-9)
      return -1;
    for (int k = 0; k < 4; k++) {
      double t = a[c][k];
      a[c][k] = a[p][k];
      a[p][k] = t;
    }
    for (int r = 0; r < 3; r++) {
      if (r == c)
        continue;
      double q = a[r][c] / a[c][c];
      for (int k = c; k < 4; k++)
        a[r][k] -= q * a[c][k];
    }
  }
  for (int c = 0; c < 3; c++)
    twist[c] = a[c][3] / a[c][c];
  return 0;
}

void pa_ssl_limit(const pa_ssl_limits *l, const double cur[3],
                  const double target[3], double dt, double out[3]) {
  double tx = target[0], ty = target[1], tw = target[2];
  double tn = hypot(tx, ty);
  if (l->v_max > 0 && tn > l->v_max) {
    tx *= l->v_max / tn;
    ty *= l->v_max / tn;
    tn = l->v_max;
  }
  double dx = tx - cur[0], dy = ty - cur[1], dn = hypot(dx, dy);
  double acc = tn > hypot(cur[0], cur[1]) ? l->acc_up : l->acc_brake;
  if (acc > 0 && dn > acc * dt) {
    dx *= acc * dt / dn;
    dy *= acc * dt / dn;
  }
  out[0] = cur[0] + dx;
  out[1] = cur[1] + dy;
  if (l->w_max > 0 && fabs(tw) > l->w_max)
    tw = copysign(l->w_max, tw);
  double dw = tw - cur[2];
  double accw = fabs(tw) > fabs(cur[2]) ? l->acc_up_w : l->acc_brake_w;
  if (accw > 0 && fabs(dw) > accw * dt)
    dw = copysign(accw * dt, dw);
  out[2] = cur[2] + dw;
}

void pa_ssl_ball_place(pa_ssl_ball *b, double x, double y, double z, double vx,
                       double vy, double vz, bool roll) {
  b->x = x;
  b->y = y;
  b->z = z > 0 ? z : 0;
  b->vx = vx;
  b->vy = vy;
  b->vz = vz;
  b->v_switch = roll ? 0 : (5.0 / 7.0) * hypot(vx, vy);
  b->holder = -1;
  b->present = true;
}

double pa_ssl_hull_dist(const pa_ssl_body *o, double c2d, double bx, double by,
                        double *nx, double *ny, bool *front, double *front_y) {
  double c = cos(o->theta), s = sin(o->theta);
  double wx = bx - o->x, wy = by - o->y;
  double px = c * wx + s * wy, py = -s * wx + c * wy; /* robot frame */
  double r = o->radius, d = c2d < r ? c2d : r;
  double h = sqrt(fmax(r * r - d * d, 0));
  double pn = hypot(px, py), dist, lx, ly;
  *front = false;
  *front_y = 0;
  if (pn < r && px < d) { /* inside: out through the nearer face */
    if (d - px < r - pn) {
      dist = -(d - px);
      lx = 1;
      ly = 0;
      *front = true;
      *front_y = py;
    } else {
      dist = -(r - pn);
      lx = pn > 1e-12 ? px / pn : -1;
      ly = pn > 1e-12 ? py / pn : 0;
    }
  } else {
    double qy = py < -h ? -h : py > h ? h : py;
    double fx = px - d, fy = py - qy, fd = hypot(fx, fy);
    dist = fd;
    lx = fd > 1e-12 ? fx / fd : 1;
    ly = fd > 1e-12 ? fy / fd : 0;
    *front = true;
    *front_y = qy;
    if (pn > 1e-12 && r * px / pn <= d && pn - r < dist) {
      dist = pn - r;
      lx = px / pn;
      ly = py / pn;
      *front = false;
    }
  }
  *nx = c * lx - s * ly;
  *ny = s * lx + c * ly;
  return dist;
}

/* The velocity of body o's surface at world point (x, y). */
static void point_vel(const pa_ssl_body *o, double x, double y, double *vx,
                      double *vy) {
  *vx = o->vx - o->w * (y - o->y);
  *vy = o->vy + o->w * (x - o->x);
}

/* Bounce off a surface with normal (nx, ny) moving at (sx, sy). */
static void bounce(pa_ssl_ball *b, const pa_ssl_params *p, double nx, double ny,
                   double sx, double sy, double e) {
  double rn = (b->vx - sx) * nx + (b->vy - sy) * ny;
  if (rn < 0) {
    b->vx -= (1 + e) * rn * nx;
    b->vy -= (1 + e) * rn * ny;
  }
  /* An impulse leaves the ball sliding. */
  b->v_switch = p->roll_ratio * hypot(b->vx, b->vy);
}

static void fire(const pa_ssl_body *o, pa_ssl_bot *bot, pa_ssl_ball *b,
                 const pa_ssl_params *p) {
  double ang = bot->kick_angle;
  ang = (ang < 0 ? 0 : ang > 80 ? 80 : ang) * M_PI / 180;
  double k = bot->kick_speed, cap = ang > 0 ? bot->max_chip : bot->max_kick;
  if (cap > 0 && k > cap)
    k = cap;
  double c = cos(o->theta), s = sin(o->theta);
  double reach =
      fmin(bot->center_to_dribbler, o->radius) + PA_SSL_BALL_RADIUS + 0.001;
  b->x = o->x + c * reach;
  b->y = o->y + s * reach;
  b->z = 0;
  double sx, sy;
  point_vel(o, b->x, b->y, &sx, &sy);
  b->vx = sx + k * cos(ang) * c;
  b->vy = sy + k * cos(ang) * s;
  b->vz = k * sin(ang);
  /* The cap holds for the ball's speed, the robot's own motion included
   * (the rules' 6.5 m/s is the ball's, not the kicker's). */
  double sp = sqrt(b->vx * b->vx + b->vy * b->vy + b->vz * b->vz);
  if (cap > 0 && sp > cap) {
    b->vx *= cap / sp;
    b->vy *= cap / sp;
    b->vz *= cap / sp;
  }
  b->v_switch = p->roll_ratio * hypot(b->vx, b->vy);
  b->holder = -1;
  bot->kick_speed = 0;
  bot->kicks++;
  bot->ball_contact = false; /* kicked away: not at the dribbler */
}

/* A bounce off robot o (moving; of mass `mass` [kg], 0: immovable): a
 * two-body collision along (nx, ny), the ball taking M / (M + m) of the
 * change of their relative speed and the robot the rest (its velocity
 * changes; its drive's limits bring it back to its command). */
static void bounce_robot(pa_ssl_ball *b, const pa_ssl_params *p, pa_ssl_body *o,
                         double mass, double nx, double ny, double e) {
  double sx, sy;
  point_vel(o, b->x, b->y, &sx, &sy);
  double rn = (b->vx - sx) * nx + (b->vy - sy) * ny;
  if (rn < 0) {
    double share = mass > 0 ? mass / (mass + PA_SSL_BALL_MASS) : 1;
    double j = (1 + e) * rn; /* < 0: the ball moves into the robot */
    b->vx -= j * share * nx;
    b->vy -= j * share * ny;
    o->vx += j * (1 - share) * nx;
    o->vy += j * (1 - share) * ny;
  }
  b->v_switch = p->roll_ratio * hypot(b->vx, b->vy);
}

/* Walls as thick segments: the ball's centre stays r + t/2 from them. */
static void seg_hit(pa_ssl_ball *b, const pa_ssl_params *p, double ax,
                    double ay, double bx, double by, double t) {
  double ux = bx - ax, uy = by - ay, l2 = ux * ux + uy * uy;
  double k = l2 > 0 ? ((b->x - ax) * ux + (b->y - ay) * uy) / l2 : 0;
  k = k < 0 ? 0 : k > 1 ? 1 : k;
  double qx = ax + k * ux, qy = ay + k * uy;
  double dx = b->x - qx, dy = b->y - qy, d = hypot(dx, dy);
  double lim = PA_SSL_BALL_RADIUS + t / 2;
  if (d >= lim || d < 1e-12)
    return;
  dx /= d;
  dy /= d;
  b->x = qx + dx * lim;
  b->y = qy + dy * lim;
  bounce(b, p, dx, dy, 0, 0, p->e_wall);
}

static void walls(const pa_ssl_field *f, const pa_ssl_params *p,
                  pa_ssl_ball *b) {
  const double r = PA_SSL_BALL_RADIUS;
  double hx = f->length / 2 + f->boundary - r;
  double hy = f->width / 2 + f->boundary - r;
  if (b->x > hx || b->x < -hx) {
    b->x = b->x > 0 ? hx : -hx;
    bounce(b, p, b->x > 0 ? -1 : 1, 0, 0, 0, p->e_wall);
  }
  if (b->y > hy || b->y < -hy) {
    b->y = b->y > 0 ? hy : -hy;
    bounce(b, p, 0, b->y > 0 ? -1 : 1, 0, 0, p->e_wall);
  }
  if (b->z >= f->goal_height || fabs(b->x) < f->length / 2 - 2 * r)
    return;
  double t = f->goal_wall, gy = f->goal_width / 2 + t / 2;
  double x0 = f->length / 2, xb = x0 + f->goal_depth + t / 2;
  double sx = b->x > 0 ? 1 : -1;
  seg_hit(b, p, sx * x0, gy, sx * xb, gy, t);
  seg_hit(b, p, sx * x0, -gy, sx * xb, -gy, t);
  seg_hit(b, p, sx * xb, -gy, sx * xb, gy, t);
}

/* The ball held at robot i's bar: it moves with the robot. */
static void hold(const pa_ssl_body *o, const pa_ssl_bot *bot, pa_ssl_ball *b) {
  double c = cos(o->theta), s = sin(o->theta);
  double reach = fmin(bot->center_to_dribbler, o->radius) + PA_SSL_BALL_RADIUS;
  b->x = o->x + c * reach;
  b->y = o->y + s * reach;
  b->z = 0;
  point_vel(o, b->x, b->y, &b->vx, &b->vy);
  b->vz = 0;
  b->v_switch = 0;
}

static void robots(const pa_ssl_params *p, pa_ssl_ball *b, pa_ssl_body *bodies,
                   pa_ssl_bot *bots, uint32_t n) {
  const double r = PA_SSL_BALL_RADIUS;
  for (uint32_t i = 0; i < n; i++) {
    pa_ssl_body *o = &bodies[i];
    if (!o->active || b->z >= o->height || fabs(b->x - o->x) > o->radius + r ||
        fabs(b->y - o->y) > o->radius + r)
      continue;
    pa_ssl_bot *bot = &bots[i];
    double nx, ny, fy;
    bool front;
    double d = pa_ssl_hull_dist(o, bot->center_to_dribbler, b->x, b->y, &nx,
                                &ny, &front, &fy);
    /* A ball resting against the bar (pushed out to exactly r last
     * substep) still touches it. */
    if (d >= r + PA_SSL_CONTACT_EPS)
      continue;
    double h = sqrt(fmax(o->radius * o->radius -
                             bot->center_to_dribbler * bot->center_to_dribbler,
                         0));
    double half = bot->dribbler_width > 0 ? bot->dribbler_width / 2 : h;
    bool bar = front && fabs(fy) <= half && b->z < r;
    if (bar) {
      bot->ball_contact = true;
      if (bot->kick_speed > 0) {
        fire(o, bot, b, p);
        continue;
      }
      if (bot->dribbler_rpm > 0) {
        b->holder = (int32_t)i;
        hold(o, bot, b);
        return;
      }
    }
    if (d >= r)
      continue;
    b->x += nx * (r - d);
    b->y += ny * (r - d);
    bounce_robot(b, p, o, bot->mass, nx, ny, bar ? p->e_front : p->e_robot);
  }
}

static void move(const pa_ssl_params *p, pa_ssl_ball *b, double h) {
  if (b->z > 0 || b->vz > 0) {
    b->vz -= PA_SSL_GRAVITY * h;
    b->z += b->vz * h;
    b->x += b->vx * h;
    b->y += b->vy * h;
    if (b->z <= 0) {
      b->z = 0;
      b->vz = -b->vz * p->e_ground > p->rest_vz ? -b->vz * p->e_ground : 0;
      b->v_switch = p->roll_ratio * hypot(b->vx, b->vy);
    }
    return;
  }
  double sp = hypot(b->vx, b->vy);
  if (sp <= 0)
    return;
  bool sliding = b->v_switch > 0 && sp > b->v_switch;
  double ns = sp - (sliding ? p->acc_slide : p->acc_roll) * h;
  if (sliding && ns <= b->v_switch) {
    ns = b->v_switch;
    b->v_switch = 0;
  }
  if (ns < 0)
    ns = 0;
  /* Constant deceleration over the substep: the mean speed moves it. */
  double k = 0.5 * (sp + ns) * h / sp;
  b->x += b->vx * k;
  b->y += b->vy * k;
  b->vx *= ns / sp;
  b->vy *= ns / sp;
}

void pa_ssl_ball_step(const pa_ssl_field *f, const pa_ssl_params *p,
                      pa_ssl_ball *b, pa_ssl_body *bodies, pa_ssl_bot *bots,
                      uint32_t n, double dt) {
  for (uint32_t i = 0; i < n; i++)
    bots[i].ball_contact = false;
  if (!b->present)
    return;
  if (b->holder >= 0) {
    uint32_t i = (uint32_t)b->holder;
    if (i >= n || !bodies[i].active || bots[i].dribbler_rpm <= 0) {
      b->holder = -1; /* released: it rolls on with the robot's speed */
    } else {
      bots[i].ball_contact = true;
      if (bots[i].kick_speed > 0) {
        fire(&bodies[i], &bots[i], b, p);
      } else {
        hold(&bodies[i], &bots[i], b);
        return;
      }
    }
  }
  /* Substeps of at most a quarter ball radius: no wall or hull skipped. */
  double reach = (fabs(b->vx) + fabs(b->vy) + fabs(b->vz)) * dt;
  int steps = (int)ceil(reach / (0.25 * PA_SSL_BALL_RADIUS));
  steps = steps < 1 ? 1 : steps > 256 ? 256 : steps;
  double h = dt / steps;
  for (int k = 0; k < steps; k++) {
    move(p, b, h);
    walls(f, p, b);
    robots(p, b, bodies, bots, n);
    if (b->holder >= 0)
      return;
  }
}
