/* sim_int.h - private helpers shared by the files of pa_sim. */
#ifndef PA_SIM_INT_H
#define PA_SIM_INT_H

#include "pa_shm.h"
#include "pa_sim.h"
#include "pa_safefile.h"

/* (int64_t)floor(v) and (int64_t)ceil(v) without a libm call (x86-64's
 * baseline has no rounding instruction): the same integer wherever the
 * conversion is defined. */
static inline int64_t pa_sim_ifloor(double v) {
  int64_t t = (int64_t)v;
  return (int64_t)((uint64_t)t - (v < (double)t));
}
static inline int64_t pa_sim_iceil(double v) {
  int64_t t = (int64_t)v;
  return (int64_t)((uint64_t)t + (v > (double)t));
}

/* Generator state derived from (seed, a, b). */
uint64_t pa_sim_int_seed(uint64_t seed, uint64_t a, uint64_t b);

/* pa_sim_clearance; robots = false leaves other robots out (the caller
 * knows none is near: nothing of theirs is read). */
double pa_sim_int_clearance(const pa_sim_model *m, const pa_sim_state *s,
                            uint32_t skip, double x, double y, double r,
                            double margin, double *nx, double *ny, bool robots);

/* pa_sim_int_clearance(margin 0) >= 0, cheaper (early exits). */
bool pa_sim_int_free(const pa_sim_model *m, const pa_sim_state *s,
                     uint32_t skip, double x, double y, double r, bool robots);
/* What one robot's wall checks keep between calls (sim_collide.c): a
 * blocked cell near it (a guess, checked at each use), and for the rows
 * around it the nearest blocked cell on each side of one column (the static
 * map's, for the map at `map`). Zeroed: empty. */
#define PA_SIM_MEMO_ROWS 24
typedef struct pa_sim_wall_memo {
  int32_t near[2];                /* column, row */
  const uint64_t *map;            /* m->blocked of the rows below */
  int32_t cx, lo, hi, y0, rows;   /* column, span [lo, hi], rows from y0 */
  int8_t left[PA_SIM_MEMO_ROWS];  /* nearest at or left of cx in [lo, cx],
                                   * minus cx (lo - 1 - cx: none) */
  int8_t right[PA_SIM_MEMO_ROWS]; /* nearest in [cx + 1, hi] minus cx
                                   * (hi + 1 - cx: none) */
  uint32_t west;                  /* bit k: cell (cx - 1, y0 + k) blocked */
} pa_sim_wall_memo;

/* A robot's walls nearby, as the faces between its blocked and free cells
 * (sim_collide.c): the cells of [x0, x1] x [y0, y1] and the faces of their
 * sides, merged along each grid line into segments. The nearest point of
 * the blocked cells to a free point lies on one of them, so a point whose
 * reach stays in the box gets its exact distance from a few segments
 * instead of the cell rows. n < 0: too many here (the row scans serve that
 * box); map NULL: empty. */
#define PA_SIM_WALL_SEGS 24
typedef struct pa_sim_wall_cache {
  const uint64_t *map;    /* m->blocked it was read from */
  int32_t x0, y0, x1, y1; /* the box [cells] */
  int32_t n;              /* segments, or -1 */
  uint32_t vert;          /* bit k: segment k lies on x = line */
  /* segment k: its grid line and its span on it, in cells from the box's
   * ring corner (x0 - 1, y0 - 1): a box is at most 61 cells a side */
  int8_t line[PA_SIM_WALL_SEGS], lo[PA_SIM_WALL_SEGS], hi[PA_SIM_WALL_SEGS];
  /* A clearance known at a point (the map's, m->blocked at cmap): the walls
   * are at least clear - |q - (cx, cy)| from any q [m, world]. */
  const uint64_t *cmap;
  double cx, cy, clear;
  /* The last full look at the faces (grid frame, cells): face nk nearest
   * to (fx, fy), every other face at least frest from it (nk < 0: none
   * since the box was filled). A point near it asks face nk alone. */
  int32_t nk;
  double fx, fy, frest;
} pa_sim_wall_cache;

/* Empties every robot's memo rows: the model (its map) was replaced. */
void pa_sim_int_walls_forget(pa_sim_state *s);
/* pa_sim_set_grid_model / pa_sim_set_world_model that hand the replaced
 * model to the caller (*old, to free off the tick) instead of freeing it. */
int pa_sim_int_swap_grid_model(pa_sim_model *m, pa_sim_state *s,
                               pa_sim_model *nm, uint32_t *moved,
                               pa_sim_model *old, char *err, size_t err_sz);
/* pa_sim_model_prepare that takes g's cells (g->cells NULL after) instead of
 * copying them: a big map's 64 MB less at the loader's peak. */
int pa_sim_int_model_prepare_take(const pa_sim_def *def, bool unknown_blocks,
                                  const pa_world *w, pa_grid *g,
                                  pa_sim_model *nm, char *err, size_t err_sz);
int pa_sim_int_swap_world_model(pa_sim_model *m, pa_sim_state *s,
                                pa_sim_model *nm, pa_sim_model *old, char *err,
                                size_t err_sz);
/* The same two with a robot's memo (or NULL): it answers "not free" at
 * once when its cell is within r (a robot pressing a wall meets the same
 * cells tick after tick) and spares the row searches; the results are
 * those without, bit for bit. */
bool pa_sim_int_free_near(const pa_sim_model *m, const pa_sim_state *s,
                          uint32_t skip, double x, double y, double r,
                          bool robots, pa_sim_wall_memo *memo);
double pa_sim_int_clearance_near(const pa_sim_model *m, const pa_sim_state *s,
                                 uint32_t skip, double x, double y, double r,
                                 double margin, double *nx, double *ny,
                                 bool robots, pa_sim_wall_memo *memo);
/* The same two for a move (sim_step.c): the other robots are those of nb
 * (NULL: none near), never all of them. pressed: the point is likely within
 * r of a wall (a robot pressing one, a bisection), so the face nearest at
 * the last full look is asked first (it answers "not free" alone when it is
 * well within r; the same answer as without). */
struct pa_sim_near;
bool pa_sim_int_move_free(const pa_sim_model *m, const pa_sim_state *s,
                          uint32_t skip, double x, double y, double r,
                          const struct pa_sim_near *nb, pa_sim_wall_memo *memo,
                          pa_sim_wall_cache *wc, bool pressed);
double pa_sim_int_move_clearance(const pa_sim_model *m, const pa_sim_state *s,
                                 uint32_t skip, double x, double y, double r,
                                 double margin, double *nx, double *ny,
                                 const struct pa_sim_near *nb,
                                 pa_sim_wall_memo *memo, pa_sim_wall_cache *wc);

/* The moves' partition by space (sim_step.c): the plane cut along x into
 * strips, each at least as wide as any robot's reach of the tick, so that
 * the robots of strips two apart cannot touch each other's moves; robots by
 * strip, then by start y and id (the order they move in). */
#define PA_SIM_STRIPS 64
typedef struct pa_sim_strip_ent {
  double x, y, r; /* [m] start position, radius */
  uint32_t id;
  uint32_t seen; /* by robot: placed from the last tick's order */
} pa_sim_strip_ent;
typedef struct pa_sim_strips {
  pa_sim_strip_ent *e;  /* [cap] robots, by strip then (y, id) */
  pa_sim_strip_ent *by; /* [cap] by robot (r < 0: inactive) */
  uint32_t *order;      /* [cap] the last tick's ids in e[]'s order (the next
                         * sort's input: nearly sorted) */
  double *ys;    /* [cap + PA_SIM_STRIPS] strip k's start ys in its order from
                  * start[k] + k, then +inf (the windows' sentinel) */
  uint32_t last; /* how many */
  uint32_t start[PA_SIM_STRIPS + 1]; /* strip k: [start[k], start[k + 1]) */
  uint32_t count;                    /* strips in use */
  double x0, w; /* [m] strip k: x in [x0 + k w, x0 + (k + 1) w) */
  double reach; /* [m] robots farther apart at the start: no
                 * effect on each other's moves this tick */
} pa_sim_strips;
int pa_sim_int_strips_init(pa_sim_strips *st, uint32_t cap);
void pa_sim_int_strips_free(pa_sim_strips *st);

/* The robots that may matter for one robot's move: the entries [lo[k],
 * hi[k]) of the strips (of pa_sim_strips), those within reach in y of its
 * start (a few more than needed: ones farther away never are the nearest
 * body nor overlap a tested point). Read at their current positions. */
typedef struct pa_sim_near {
  const pa_sim_strips *st;
  uint32_t lo[3], hi[3];
  uint32_t parts;
  bool all; /* every robot instead (a small world: no strips) */
} pa_sim_near;

/* One robot's motion of this tick, planned before anyone moves (it depends
 * only on the robot's own state). */
typedef struct pa_sim_motion {
  double dx, dy;           /* [m] world-frame displacement wanted */
  double v, vy, w;         /* limited body velocities */
  double th0, dth;         /* heading at the start, turn over the tick */
  double c0, s0;           /* cos, sin of th0 */
  uint8_t alone;           /* no other robot near enough to matter this tick */
  pa_sim_wall_memo walls;  /* its wall checks' memory (pa_sim_int_free_near) */
  pa_sim_wall_cache faces; /* its walls nearby (pa_sim_int_move_free) */
  double sc_theta, sc_c, sc_s; /* the last heading's cos and sin (sc_ok:
                                * computed; a robot not turning reuses
                                * them) */
  bool sc_ok;
  double arc_dth, arc_a, arc_b; /* the last arc factors computed (a robot
                                 * turning steadily reuses them) */
} pa_sim_motion;

/* Distance [m] from (x, y) to the nearest blocked cell region, exact when it
 * is below reach, otherwise some value >= reach. (nx, ny): unit normal away
 * from it (world frame), only set when exact. */
double pa_sim_int_wall_clearance(const pa_sim_model *m, double x, double y,
                                 double reach, double *nx, double *ny);
/* Signed distance [m] from (x, y) to an obstacle's surface (negative
 * inside), with the outward normal. */
double pa_sim_int_obstacle_dist(const pa_obstacle_info *o, double x, double y,
                                double *nx, double *ny);

/* Start poses for a new model's robots0[0..total) (sim_place.c): the
 * given ones checked, those with no_pose[i] set on the free cells nearest
 * (0, 0) in a fixed order; -1 with err when one cannot be placed. */
int pa_sim_int_place_robots(pa_sim_model *m, const bool *no_pose,
                            uint32_t total, char *err, size_t err_sz);

/* Broad phase of robots: uniform grid hashed into a table. */
int pa_sim_int_hash_init(pa_sim_hash *h, uint32_t cap);
void pa_sim_int_hash_free(pa_sim_hash *h);
void pa_sim_int_hash_build(pa_sim_hash *h, const pa_sim_state *s, double cell);
/* The same buckets for the scans: dense (h->dense) when the robots' cells
 * fit in the table, else as pa_sim_int_hash_build. */
void pa_sim_int_lhash_build(pa_sim_hash *h, const pa_sim_state *s, double cell);
/* s->lhash built at its first use instead (by whichever thread gets there
 * first; the other scan threads cast walls meanwhile): plan records the
 * cell size, ready builds it or waits for the thread building it.
 * Positions must not change between the two. */
void pa_sim_int_lhash_plan(pa_sim_state *s, double cell);
void pa_sim_int_lhash_ready(const pa_sim_state *s);
/* Bucket of a point's cell (inline: the broad phase asks 9 per robot). */
static inline uint32_t pa_sim_int_hash_key(const pa_sim_hash *h, int64_t cx,
                                           int64_t cy) {
  uint32_t k = (uint32_t)cx * 73856093u ^ (uint32_t)cy * 19349663u;
  return k & h->mask;
}

/* Puts robot id (info[id] already set) at a pose with zero velocities and
 * commands; keeps its scan_seq. */
void pa_sim_int_robot_place(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
                            double x, double y, double theta);

/* A world to put into a state (pa_sim_int_world_install). */
typedef struct pa_sim_world_src {
  const pa_robot_info *robots; /* [robot_count]; inactive: slot cleared */
  uint32_t robot_count;
  const pa_robot_state *states; /* [state_count] or NULL: states[i] is taken
                                 * when active, of robots[i]'s generation
                                 * and sane; else the robot starts at rest
                                 * at its start pose */
  uint32_t state_count;
  const pa_obstacle_info *obstacles; /* [obstacle_count] */
  uint32_t obstacle_count;
  bool new_gens; /* a slot that held another body since gets a generation
                  * above the one it had (reset) */
} pa_sim_world_src;
/* The one way a whole world is put into s (reset, snapshot load, resume
 * after a restart): robots and obstacles replace every slot (the rest are
 * cleared), names terminated, counts recounted, the world republished.
 * Tick, sim time and each slot's scan_seq continue (a taken state's
 * scan_seq never goes back). Records must have been checked. */
void pa_sim_int_world_install(const pa_sim_model *m, pa_sim_state *s,
                              const pa_sim_world_src *w);

/* pa_sim_step with its start time given (t0 [ns], CLOCK_MONOTONIC);
 * returns its end time (the loop reuses both: fewer clock reads). timed =
 * false leaves phase_ns alone and reads the clock once. */
int64_t pa_sim_int_step(const pa_sim_model *m, pa_sim_state *s, int64_t t0,
                        bool timed);

/* Per-thread scan scratch: the beam direction table (rebuilt when the beam
 * count changes) and the tables of one scan's body culling. */
#define PA_SIM_DEFER 8
typedef struct pa_sim_scratch {
  float *beam_cos, *beam_sin; /* [beam_cap] */
  uint32_t beam_table_n;
  /* sim_laser.c's body culling: the beam index of each pseudo-angle step
   * (for beam_table_n beams) and the wall returns' max per 4 beams. */
  int32_t *qpos; /* [PA_SIM_QBINS + 1] */
  float *smax;   /* [beam_cap / 4 + 1] */
  float *part;   /* [beam_cap]: a scan's returns in a part's finish */
  /* sim_pool.c: scans whose walls this thread cast while another built the
   * robots' laser buckets, their bodies still to do */
  uint32_t defer[PA_SIM_DEFER];
  uint32_t ndefer;
} pa_sim_scratch;
#define PA_SIM_QBINS 1024
int pa_sim_int_scratch_init(pa_sim_scratch *k, uint32_t beam_cap);
void pa_sim_int_scratch_free(pa_sim_scratch *k);

/* When and where a scan was taken, with the laser settings it was cast
 * with: its record's header fields (a command may change the settings
 * before an overlapped scan's record is written). */
typedef struct pa_sim_scan_stamp {
  uint64_t tick;
  double sim_time;
  double x, y, theta;
  uint32_t robot, seq;
  uint32_t beams;
  float range_min, range_max;
} pa_sim_scan_stamp;
/* Robot id's scan of this tick, as it stands now. */
void pa_sim_int_scan_stamp(const pa_sim_model *m, const pa_sim_state *s,
                           uint32_t id, pa_sim_scan_stamp *t);

/* Where one scan looks from: the sensor pose of its tick, copied (with its
 * grid-frame form), so its beams can be cast while later ticks move the
 * robot. */
typedef struct pa_sim_scan_at {
  uint32_t id, beams;
  double x, y, theta;    /* world [m, rad] */
  double c, s;           /* cos, sin of theta */
  double gx, gy, gc, gs; /* grid frame [cells], cos and sin of the heading */
  /* The other robots as of its tick: a scan batch's own laser buckets
   * (built when it was posted), or NULL: s->lhash, built at first use. */
  const pa_sim_hash *lh;
} pa_sim_scan_at;
void pa_sim_int_scan_at(const pa_sim_model *m, const pa_sim_state *s,
                        uint32_t id, pa_sim_scan_at *a);

/* pa_sim_scan with the caller's scratch (reads the state, writes only out
 * and robot id's noise generator: scans of one tick can run in parallel). */
void pa_sim_int_scan(const pa_sim_model *m, const pa_sim_state *s, uint32_t id,
                     float *out, pa_sim_scratch *k);
/* Its two parts. Walls: the grid ranges of beams [b0, b1) only (beams are
 * independent: any split gives the same ranges; reads only the grid, a and
 * the robot's laser settings). Finish: obstacles, other robots, clamping and
 * noise, for the whole scan, after every wall beam. */
void pa_sim_int_scan_walls(const pa_sim_model *m, const pa_sim_state *s,
                           const pa_sim_scan_at *a, float *out,
                           pa_sim_scratch *k, uint32_t b0, uint32_t b1);
void pa_sim_int_scan_finish(const pa_sim_model *m, const pa_sim_state *s,
                            const pa_sim_scan_at *a, float *out,
                            pa_sim_scratch *k);
/* The finish of beams [b0, b1) alone, once their wall beams are cast: the
 * bodies on those beams and their clamp (the other beams are neither read
 * nor written), so a scan's parts are independent: walls then finish of
 * each part give the whole finish's ranges, bit for bit. Only for a laser
 * without noise (its draws follow the beams in order) unless the part is
 * the whole scan. */
void pa_sim_int_scan_finish_part(const pa_sim_model *m, const pa_sim_state *s,
                                 const pa_sim_scan_at *a, float *out,
                                 pa_sim_scratch *k, uint32_t b0, uint32_t b1);

/* Scan workers (threads - 1 helpers; the caller casts too). NULL when
 * threads <= 1 (or on failure, with err set). */
pa_sim_pool *pa_sim_int_pool_new(const pa_sim_model *m, uint32_t threads,
                                 char *err, size_t err_sz);
void pa_sim_int_pool_free(pa_sim_pool *p);
/* Runs fn(arg, i, thread's scratch, thread's count) for i in [0, n) on all
 * threads, `chunk` items at a time; returns the sum of the counts. */
typedef void (*pa_sim_pool_fn)(void *arg, uint32_t i, pa_sim_scratch *k,
                               uint64_t *count);
uint64_t pa_sim_int_pool_run(pa_sim_pool *p, pa_sim_pool_fn fn, void *arg,
                             uint32_t n, uint32_t chunk);
/* One look of a thread waiting for another's item or flag: it watches
 * (items are short); past POOL_YIELD_NS (sim_pool.c) the other has lost its
 * core (a busy machine), so this one gives its own away now and then. */
typedef struct pa_sim_waiter {
  uint32_t i;
  int64_t until;
} pa_sim_waiter;
void pa_sim_int_wait_step(pa_sim_waiter *w);
/* The same for a job shorter than a thread's wake-up: parked workers are
 * woken only while jobs come back to back (else the caller runs it). */
uint64_t pa_sim_int_pool_run_short(pa_sim_pool *p, pa_sim_pool_fn fn, void *arg,
                                   uint32_t n, uint32_t chunk);
/* Casts the scans of robots ids[0..n) into s->ranges, on all threads; returns
 * when every one is written. */
void pa_sim_int_pool_scan(pa_sim_pool *p, const pa_sim_model *m,
                          pa_sim_state *s, const uint32_t *ids, uint32_t n);
/* One robot's scan with its wall beams split over all threads. */
void pa_sim_int_pool_scan_one(pa_sim_pool *p, const pa_sim_model *m,
                              pa_sim_state *s, uint32_t id);
/* The task stream (overlapped scans): while it is open the workers stay in
 * it and take tasks in posting order; the caller posts, may take tasks
 * itself, and asks which are done. task posts wall beams [b0, b1) of a
 * (copied) into out and returns its ticket (1, 2, ... in posting order);
 * the caller must keep fewer than 8 tasks not done. taken: tasks taken so
 * far (by anyone). help: the caller takes tasks until those before ticket
 * (inclusive) are taken. wait: help, then until it is done. stream_close:
 * every task done, workers out (a pool_run closes it first). While tasks
 * are in flight the caller must not change the robot's laser settings. */
uint64_t pa_sim_int_pool_task(pa_sim_pool *p, const pa_sim_model *m,
                              const pa_sim_state *s, const pa_sim_scan_at *a,
                              float *out, uint32_t b0, uint32_t b1);
/* A whole scan as one task: its walls, then its finish (bodies, clamp and
 * noise: the robot's own generator, which no other task uses). The caller
 * keeps at most PA_SIM_POOL_TASKS tasks not done. */
#define PA_SIM_POOL_TASKS 256
uint64_t pa_sim_int_pool_task_scan(pa_sim_pool *p, const pa_sim_model *m,
                                   const pa_sim_state *s,
                                   const pa_sim_scan_at *a, float *out);
uint64_t pa_sim_int_pool_taken(pa_sim_pool *p);
void pa_sim_int_pool_help(pa_sim_pool *p, uint64_t ticket);
bool pa_sim_int_pool_task_done(pa_sim_pool *p, uint64_t ticket);
void pa_sim_int_pool_wait(pa_sim_pool *p, uint64_t ticket);
/* Until `ticket` is done, taking any posted task meanwhile (later ones
 * too: the wait does their work instead of watching). */
void pa_sim_int_pool_wait_busy(pa_sim_pool *p, uint64_t ticket);
void pa_sim_int_pool_stream_close(pa_sim_pool *p);
/* The caller's scratch (for the finish of an overlapped scan). */
pa_sim_scratch *pa_sim_int_pool_scratch(pa_sim_pool *p);
/* The loop waits for its next lockstep command: workers park at once
 * instead of watching for a job (the next job posted ends this). p may be
 * NULL (one thread). */
void pa_sim_int_pool_idle(pa_sim_pool *p);

/* Overlapped scans of a lone robot (sim_step.c): up to PA_SIM_LATE_FLY in
 * flight, oldest first; completed ones wait in `ready` for their records. */
#define PA_SIM_LATE_FLY 2
#define PA_SIM_LATE_READY (PA_SIM_LATE_FLY + 1)
typedef struct pa_sim_late_scan {
  pa_sim_scan_at at;
  pa_sim_scan_stamp stamp;
  uint64_t task_a, task_b; /* tickets of its two parts */
  float *buf;              /* [beam_cap] */
} pa_sim_late_scan;
typedef struct pa_sim_late {
  pa_sim_late_scan fly[PA_SIM_LATE_FLY];
  uint32_t head, count;
  pa_sim_scan_stamp ready[PA_SIM_LATE_READY];
  float *ready_buf[PA_SIM_LATE_READY]; /* [beam_cap] each */
  uint32_t ready_count;
  double share; /* of the first part (the worker's) */
  /* Many robots (sim_step.c's scan batch): one tick's scans, whole, cast
   * by the workers while this thread runs the next tick's moves. The next
   * tick's batch is posted before this one is settled (the workers never
   * wait between the two), so two sets of buffers and buckets: set
   * batch_set the newest, the other the batch before it, in flight until
   * settled, then waiting for its records. */
  uint32_t batch_n[2];               /* scans in flight in each set */
  uint32_t batch_set;                /* the set of the newest batch */
  uint64_t batch_first[2];           /* the first one's ticket */
  uint32_t batch_cap;                /* scans each set holds */
  uint32_t *batch_id[2];             /* [batch_cap] the robots in flight */
  float *batch_buf[2];               /* [batch_cap * beam_cap] */
  pa_sim_scan_stamp *batch_stamp[2]; /* [batch_cap] */
  /* The laser buckets each set's scans read: built from the robots' poses
   * of its tick, never from their records afterwards. */
  pa_sim_hash held[2];
  /* completed, records not written: written at the next publish (sim_shm.c
   * write_late; pa_sim_run publishes after every tick and every settle), so
   * that the next batch to be posted into their set never finds them there;
   * a caller that never publishes has them replaced */
  uint32_t bready_n, bready_set;
} pa_sim_late;
int pa_sim_int_late_init(pa_sim_state *s, uint32_t beam_cap);
/* s's pool for a job of the tick, or NULL while a batch of scans is in
 * flight on it (a pool job would wait for the scans first): run it on this
 * thread then. */
pa_sim_pool *pa_sim_int_pool_between(const pa_sim_state *s);
void pa_sim_int_late_free(pa_sim_state *s);

/* A command's error: status and message into r; returns st. */
pa_status pa_sim_int_fail(pa_reply *r, pa_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An active obstacle (or agent slot) of `shape` at (x, y, theta) with the
 * circle's radius or the box's size checked against the property schema;
 * PA_OK, or the refusal in r. */
pa_status pa_sim_int_obstacle_init(pa_obstacle_info *o, uint32_t shape,
                                   double x, double y, double theta,
                                   double radius, double size_x, double size_y,
                                   pa_reply *r);

/* A robot's pose and velocities into r (a[0..6], u = id). */
void pa_sim_int_reply_pose(pa_reply *r, const pa_sim_state *s, uint32_t id);

/* Snapshots (sim_snap.c): save c->name / load it back (PA_OP_*_SNAPSHOT).
 * The object: this header, then robot_count pa_robot_info, robot_count
 * pa_robot_state and obstacle_count pa_obstacle_info. */
#define PA_SIM_SNAP_MAGIC 0x7061736e6170ull /* "pasnap" */
#define PA_SIM_SNAP_VERSION 1u
typedef struct pa_sim_snap_hdr {
  uint64_t magic;
  uint32_t version;
  uint32_t robot_count, obstacle_count;
  uint32_t info_size, state_size, obstacle_size; /* struct sizes at save */
  uint32_t scan_phase; /* (tick - scan_tick0) % ticks_per_scan when saved */
  uint64_t tick;       /* when saved */
  double sim_time;
  uint64_t checksum; /* FNV-1a of the body, then of this header with
                      * checksum 0: a torn write does not load */
} pa_sim_snap_hdr;
uint64_t pa_sim_int_snap_sum(const pa_sim_snap_hdr *h, const void *body,
                             size_t n);
pa_status pa_sim_int_snapshot_save(const pa_sim_model *m, const pa_sim_state *s,
                                   const pa_cmd *c, pa_reply *r);
pa_status pa_sim_int_snapshot_load(const pa_sim_model *m, pa_sim_state *s,
                                   const pa_cmd *c, pa_reply *r);
/* True (why says which) if a record of a loaded snapshot could not have
 * come from this simulator (records checked on name-terminated copies). */
bool pa_sim_int_snap_records_bad(const pa_sim_model *m, const pa_robot_info *si,
                                 const pa_robot_state *ss, uint32_t nr,
                                 const pa_obstacle_info *so, uint32_t no,
                                 char *why, size_t why_sz);
/* The world as a JSON file under --data_dir (sim_snapjson.c): path = the
 * file; replies snapshot (load: the file's tick and sim time). */
pa_status pa_sim_int_snapshot_json_save(const pa_sim_model *m,
                                        const pa_sim_state *s, const pa_cmd *c,
                                        pa_reply *r);
pa_status pa_sim_int_snapshot_json_load(const pa_sim_model *m, pa_sim_state *s,
                                        const pa_cmd *c, pa_reply *r);
/* --data_dir (NULL or "": the working directory), created if missing,
 * canonical in out [PATH_MAX]: 0, or -1 with the reason in err. */
int pa_sim_int_data_dir(const char *flag, char *out, char *err, size_t err_sz);
/* A file to write under --data_dir for c (pa_safefile: its directories
 * created inside, no symlink followed, a temporary file renamed into place;
 * one that exists is replaced only with PA_CMDF_OVERWRITE): 0, or -1 with r
 * set ("runs/a.json already exists (give overwrite: true ...)"). */
int pa_sim_int_file_begin(const pa_sim_model *m, const pa_cmd *c,
                          const char *rel, pa_safe_file *f, pa_reply *r);
/* Commits f, or with e (the errno of a failed write) removes it: 0, or -1
 * with r naming the file and the error ("cannot write a.json: No space
 * left on device"). */
int pa_sim_int_file_end(pa_safe_file *f, int e, pa_reply *r);
/* In an export directory until its export finished: a directory holding
 * it is an export a crash or a kill cut short, reused by a retry. */
#define PA_SIM_EXPORT_MARKER ".pa-export-unfinished"
/* export_dataset's directory rel under the data directory dd (canonical)
 * claimed for c (sim_recdir.c): created beneath dd through no symlink, or
 * reused when empty, unfinished or c says overwrite; not one of busy[] (the
 * exports still being written). 0 with its absolute path in dir, or -1 with
 * r set (errors name rel as given). */
int pa_sim_int_export_claim(const char *dd, const char *rel, const pa_cmd *c,
                            const char *const *busy, size_t n_busy, char *dir,
                            size_t dir_sz, pa_reply *r);
/* save_world (sim_saveworld.c): the world as it stands as a world YAML that
 * --world loads, its map beside it (<stem>.map.yaml + .png). */
pa_status pa_sim_int_save_world(const pa_sim_model *m, pa_sim_state *s,
                                const pa_cmd *c, pa_reply *r);
/* Every property row of kind (PA_PK_ROBOT: pa_robot_def -> pa_robot_info,
 * PA_PK_OBSTACLE: pa_obstacle_def -> pa_obstacle_info) copied by its row. */
void pa_sim_int_props_from_def(void *rec, const void *def, unsigned kind);
/* Record sanity (world file, loaded snapshots, a restart's world): 0, or -1
 * with a message naming the record and the field. */
int pa_sim_int_check_robot(const pa_robot_info *ri, uint32_t max_beams,
                           char *err, size_t err_sz);
int pa_sim_int_check_obstacle(const pa_obstacle_info *o, char *err,
                              size_t err_sz);
/* A robot's dynamic state: every number finite (|v| <= 1e9), a known
 * command frame. */
bool pa_sim_int_state_ok(const pa_robot_state *r);
/* robot_count / obstacle_count down to the highest active one + 1. */
void pa_sim_int_recount(pa_sim_state *s);

/* export_dataset (sim_rec.c): start (PA_OP_EXPORT_DATASET: name, u =
 * ticks; replies a = first and last tick), the rows of a tick (after its
 * state record), a scan (as its record is written), and whether the
 * recording has reached its last tick (the loop then completes scans in
 * flight and stops it). */
pa_status pa_sim_int_rec_start(const pa_sim_model *m, pa_sim_state *s,
                               const pa_cmd *c, pa_reply *r);
void pa_sim_int_rec_tick(pa_sim_state *s);
void pa_sim_int_rec_scan(pa_sim_rec *rec, const pa_scan *h,
                         const float *ranges);
bool pa_sim_int_rec_due(const pa_sim_state *s);
/* Exports whose thread has finished: joined and freed; true when r is a
 * reply to send (PA_DATASET_WAIT: the paths' counts and a status; call
 * again for more). */
bool pa_sim_int_rec_collect(pa_sim_state *s, pa_reply *r);
/* export_dataset's point clouds (sim_cloud.c): points.csv and points.ply
 * (either FILE may be NULL), each scan's returns in the world frame; begin
 * writes the headers, end patches the PLY's vertex count (0, or -1 when
 * that write failed). */
typedef struct pa_sim_cloud {
  FILE *csv, *ply;
  uint64_t points; /* written so far */
  long count_at;   /* the PLY's vertex count digits; -1 = none */
} pa_sim_cloud;
void pa_sim_int_cloud_begin(pa_sim_cloud *c);
void pa_sim_int_cloud_scan(pa_sim_cloud *c, const pa_scan *h,
                           const uint8_t *ranges);
int pa_sim_int_cloud_end(pa_sim_cloud *c);
/* export_dataset's files (sim_pack.c): an RGB888 image (row 0 = top) as
 * PNG; the files (relative to root) as one ustar .tar.gz whose entries sit
 * under top/. Each written whole then renamed: 0, or -1 with err set. */
int pa_sim_int_png_write(const char *path, const uint8_t *rgb, uint32_t w,
                         uint32_t h, char *err, size_t err_sz);
int pa_sim_int_targz(const char *archive, const char *root, const char *top,
                     const char *const *files, size_t n, char *err,
                     size_t err_sz);

/* The ops (sim_cmd.c): one row per PA_OP_*, the one list of what each op
 * does and how the run loop treats it. */
enum {
  PA_SIM_OPF_ROBOT = 1u << 0,   /* needs an active robot (cmd.robot) */
  PA_SIM_OPF_PUBLISH = 1u << 1, /* changes the state: publish a tick at once */
  PA_SIM_OPF_LOADER = 1u << 2,  /* loaded off the loop by pa_sim_run's loader
                                 * thread (apply: the check before it starts) */
  PA_SIM_OPF_TICKS = 1u << 3,   /* answered after its ticks (STEP) */
  PA_SIM_OPF_LATER = 1u << 4,   /* with PA_DATASET_WAIT: popped at once,
                                 * answered when its thread is done
                                 * (pa_sim_int_rec_collect) */
};
typedef pa_status (*pa_sim_op_fn)(const pa_sim_model *m, pa_sim_state *s,
                                  const pa_cmd *c, pa_reply *r);
typedef struct pa_sim_op_def {
  const char *name;   /* "set_cmd", as the log says it */
  pa_sim_op_fn apply; /* NULL: nothing to check (loader ops only) */
  unsigned flags;     /* PA_SIM_OPF_* */
} pa_sim_op_def;
/* The row of op, or NULL for PA_OP_NONE and unknown ops. */
const pa_sim_op_def *pa_sim_op(uint32_t op);
unsigned pa_sim_op_flags(uint32_t op); /* 0 for unknown ops */

/* ---- dynamic bodies (sim_dyn.c) ---- */
#define PA_SIM_PULSES_MAX 16 /* apply_force / apply_torque at once */
typedef struct dyn_pulse {
  double fx, fy, tz; /* in frame */
  double px, py;     /* body point [m] */
  uint32_t frame;
  uint32_t ticks_left;
} dyn_pulse;

/* The inputs of one robot, private to pa-sim (kept for a restart by
 * sim_keep.c). */
struct pa_sim_dyn {
  uint32_t gen;   /* the robot's info gen these belong to */
  bool forced;    /* held force / thrusters drive it, not the controller */
  double fx, fy;  /* held force [N] in frame */
  double tz;      /* held torque [N m] */
  uint32_t frame; /* PA_FRAME_* */
  double thrust[PA_THRUSTERS_MAX]; /* held values in [-1, 1] */
  dyn_pulse pulse[PA_SIM_PULSES_MAX];
  uint32_t pulses;
};
typedef struct pa_sim_dyn pa_sim_dyn;
int pa_sim_int_dyn_init(pa_sim_state *s);
void pa_sim_int_dyn_free(pa_sim_state *s);
/* Robot id holds no inputs (a new or replaced robot). */
void pa_sim_int_dyn_clear(pa_sim_state *s, uint32_t id);
/* A velocity command came: the controller drives it, held forces go. */
void pa_sim_int_dyn_velocity(pa_sim_state *s, uint32_t id);
/* Held forces or thrusters drive robot id (not the controller). */
bool pa_sim_int_dyn_forced(pa_sim_state *s, uint32_t id);
/* A dynamic robot's plan of this tick (as robot_plan's). */
void pa_sim_int_dyn_plan(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
                         pa_sim_motion *mv);
/* A bound of |v| + |vy| a dynamic robot reaches by the end of this tick. */
double pa_sim_int_dyn_speed_bound(const pa_sim_model *m, pa_sim_state *s,
                                  uint32_t id);
pa_status pa_sim_int_op_set_force(const pa_sim_model *m, pa_sim_state *s,
                                  const pa_cmd *c, pa_reply *r);
pa_status pa_sim_int_op_set_thrust(const pa_sim_model *m, pa_sim_state *s,
                                   const pa_cmd *c, pa_reply *r);
/* NULL, or what is wrong with a robot's dynamic-body fields. */
const char *pa_sim_int_dyn_check(const pa_robot_info *ri);

/* ---- agents (sim_agents.c) ---- */
/* An agent's behaviour state, pa-sim's own (the obstacle slot holds its
 * pose; saved by sim_snapjson.c, kept for a restart by sim_keep.c). */
struct pa_sim_agent {
  uint32_t gen;      /* the obstacle's gen this belongs to */
  uint32_t wp_count; /* waypoints */
  uint32_t wp;       /* the next one */
  uint32_t turn;     /* random walk: ticks to the next heading */
  double speed;      /* [m/s] */
  double wpx[PA_AGENT_WAYPOINTS_MAX], wpy[PA_AGENT_WAYPOINTS_MAX];
  double vx, vy; /* [m/s] velocity now */
  uint64_t rng;
};
typedef struct pa_sim_agent pa_sim_agent;
typedef struct pa_sim_agent_def { /* a world file agent's behaviour */
  double speed;
  double wpx[PA_AGENT_WAYPOINTS_MAX], wpy[PA_AGENT_WAYPOINTS_MAX];
  uint32_t wp_count;
} pa_sim_agent_def;
int pa_sim_int_agents_init(pa_sim_state *s);
void pa_sim_int_agents_free(pa_sim_state *s);
/* s->agent_count from the obstacles (after a world is installed). */
void pa_sim_int_agents_recount(pa_sim_state *s);
/* The world's agents back at their start (after the obstacles are). */
void pa_sim_int_agents_reset(const pa_sim_model *m, pa_sim_state *s);
/* Every agent's move of this tick (before the robots'). */
void pa_sim_int_agents_step(const pa_sim_model *m, pa_sim_state *s);
/* m->agents0 from the world's agent obstacles: 0 or -1 (memory). */
int pa_sim_int_agents_model(pa_sim_model *m, const pa_world *w);
pa_status pa_sim_int_op_spawn_agent(const pa_sim_model *m, pa_sim_state *s,
                                    const pa_cmd *c, pa_reply *r);
pa_status pa_sim_int_op_move_agent(const pa_sim_model *m, pa_sim_state *s,
                                   const pa_cmd *c, pa_reply *r);
pa_status pa_sim_int_op_remove_agent(const pa_sim_model *m, pa_sim_state *s,
                                     const pa_cmd *c, pa_reply *r);
pa_status pa_sim_int_op_clear_agents(const pa_sim_model *m, pa_sim_state *s,
                                     const pa_cmd *c, pa_reply *r);

/* Lockstep: does spinning for the next command pay? It saves a wake-up
 * when pa-sim has a core to itself, and slows the client and the gateway
 * when they need that core (3 processes on 2 cores, or a busy machine). The
 * run loop measures: it takes commands both ways for PA_SIM_TUNE_PROBE_NS
 * each (in alternating order), keeps the way that got clearly more of them
 * per second for PA_SIM_TUNE_KEEP_NS, and measures again; a pause in the
 * session restarts the window it interrupted. */
#define PA_SIM_TUNE_PROBE_NS 25000000LL /* each way tried this long, */
#define PA_SIM_TUNE_KEEP_NS 400000000LL /* the faster one kept this long */
#define PA_SIM_TUNE_ACTIVE_NS 2000000LL /* a longer gap is not lockstep */
typedef struct pa_sim_spin_tuner {
  int phase;      /* 0, 1: probing (way = phase ^ flip), 2: keeping */
  bool flip;      /* which way the next probe tries first */
  bool spin;      /* the way now: spin (true) or wait on the semaphore */
  int64_t t0;     /* this window's start [ns] */
  uint32_t n;     /* commands in it */
  double rate[2]; /* commands/s waiting [0], spinning [1] (EWMA over probes) */
} pa_sim_spin_tuner;
void pa_sim_int_tuner_init(pa_sim_spin_tuner *tu);
/* A command came at `now`, `gap` after the one before it. */
void pa_sim_int_tuner_note(pa_sim_spin_tuner *tu, int64_t now, int64_t gap);

/* The step lane (sim_lane.c, pa_lane): whether a request waits; the
 * commands it asks as queued ones (returns its req): the STEP c, and for a
 * batch *ncmds SET_CMDS first in cmds (room for max_robots drives), or
 * r->status not PA_OK with r the reply of a refused batch; its reply (done
 * = req and a post); at start, wake_off published and a request a dead
 * pa-sim left answered busy. */
bool pa_sim_lane_pending(const pa_stack *st);
/* A STEP's obs_beams past max_beams: its refusal (beams, max_beams), the
 * same words from the lane and from a queued STEP. */
#define PA_SIM_OBS_BEAMS_BAD                                                   \
  "beams %u: give 1 to max_beams (%u), or 0 for the scans as cast"
uint32_t pa_sim_lane_take(const pa_stack *st, const pa_sim_state *s, pa_cmd *c,
                          pa_cmd *cmds, size_t *ncmds, pa_reply *r);
void pa_sim_lane_answer(pa_stack *st, uint32_t req, const pa_reply *r);
void pa_sim_lane_init(pa_stack *st, const pa_sim_state *s);

/* Monotonic clock [ns]: the project's one (pa_now_ns, CLOCK_MONOTONIC). */
static inline int64_t pa_sim_int_now(void) { return pa_now_ns(); }

/* The wall faces' index of m's march field for the face caster (sim_faces.c):
 * NULL when out of memory or when the map has too many faces for the index
 * to pay (the march caster serves it alone). */
struct pa_sim_faces *pa_sim_int_faces_build(const pa_sim_model *m);
void pa_sim_int_faces_free(struct pa_sim_faces *fc);

#endif
