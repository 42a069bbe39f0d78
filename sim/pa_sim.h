/*
 * pa_sim.h - the simulation core of pa-sim (library pa_sim), driven directly
 * by tests and benchmarks; main.c is a thin process around it.
 *
 * Model (map, distance field, initial world, rates, seed: read-only during
 * ticks; pa_sim_set_grid / pa_sim_set_world replace it between them) vs
 * mutable state (tick, time, robots, obstacles,
 * mode). pa_sim_step(model, state) advances one tick as a pipeline of timed
 * phases: kinematics+limits -> collide -> odometry -> sensors. Commands
 * (pa_sim_apply) and publishing to shared memory (pa_sim_shm_*) are the
 * driver's phases around it.
 *
 * Robot and obstacle records are the shared-memory types of pa_shm.h
 * (pa_robot_info, pa_robot_state, pa_obstacle_info) so that publishing and
 * resuming are plain copies.
 */
#ifndef PA_SIM_H
#define PA_SIM_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pa_map.h"
#include "pa_shm.h"
#include "pa_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- definition (flags) -------------------------------------------------- */

/* The exact ray caster's vector paths (see pa_sim_simd_path). */
typedef enum pa_sim_simd {
  PA_SIM_SIMD_AUTO = 0, /* the fastest this CPU has (avx512, avx2, portable) */
  PA_SIM_SIMD_AVX512,   /* x86-64 with AVX-512 F/DQ/VL */
  PA_SIM_SIMD_AVX2,     /* x86-64 with AVX2 + FMA */
  PA_SIM_SIMD_PORTABLE, /* vector extensions: SSE2 / NEON, any CPU */
  PA_SIM_SIMD_SCALAR,   /* one ray at a time */
  PA_SIM_SIMD_COUNT
} pa_sim_simd;

/* pa_sim_def.force: these win over the world even at their default value. */
enum {
  PA_SIM_FORCE_LASER_BEAMS = 1u << 0,
  PA_SIM_FORCE_LASER_RANGE_MIN = 1u << 1,
  PA_SIM_FORCE_LASER_RANGE_MAX = 1u << 2,
  PA_SIM_FORCE_LASER_NOISE = 1u << 3,
  PA_SIM_FORCE_CAMERA_WIDTH = 1u << 4,
  PA_SIM_FORCE_CAMERA_HEIGHT = 1u << 5,
  PA_SIM_FORCE_CAMERA_FOV = 1u << 6,
};

#define PA_SIM_DATASET_DIR_MAX 200

typedef struct pa_sim_def {
  double control_hz;       /* [Hz] default 200 */
  double scan_hz;          /* [Hz] default 10 */
  double speed;            /* time scale, 0 = as fast as possible; default 1 */
  uint64_t seed;           /* default 0 */
  bool paused;             /* start paused */
  uint32_t robots;         /* total robots at least this many (extras placed
                              on free cells); default 1 */
  uint32_t max_robots;     /* capacity (shm: ctl->def.max_robots); 256 */
  uint32_t max_obstacles;  /* capacity; 1024 */
  uint32_t max_beams;      /* capacity per scan; 4096 */
  /* Laser and camera: applied to every robot when they differ from the
   * pa_robot_def_default() values or their bit is in `force` (the command
   * line gave them), else the world file's values stay. */
  uint32_t laser_beams;    /* default 360 */
  double laser_range_min;  /* [m] default 0.15 */
  double laser_range_max;  /* [m] default 12 */
  double laser_noise;      /* Gaussian sigma [m], default 0 */
  uint32_t camera_width, camera_height; /* [px] default 640 x 480 */
  double camera_fov;       /* [rad] default 60 deg */
  uint32_t force;          /* PA_SIM_FORCE_* bits; default 0 */
  /* Stage-like odometry error: each robot draws a constant ratio per axis,
   * uniform in [-e, e], from (seed, id, gen); increments are scaled by
   * (1 + ratio). All 0 = odometry equals ground truth. */
  double odom_error[3];    /* x, y, theta ratios */
  /* Loop timing: --realtime (pa-sim also asks for SCHED_FIFO and mlockall).
   * Default false. */
  bool realtime;
  /* Spin this long [us] before each deadline instead of sleeping to it.
   * -1 (default) = auto: this machine's recent wake-up lateness (p99 + 20
   * us), at most 250 us within 5-25% of the period; 300 with realtime;
   * 0 = never spin. */
  int32_t spin_us;
  /* The shared-memory instance, for snapshots ("" = none: refused). */
  char instance[48];
  /* export_dataset writes recordings under this directory ("" = off). */
  char dataset_dir[PA_SIM_DATASET_DIR_MAX];
  /* set_map / set_scenario read files only inside this directory (NULL or
   * "" = pa-sim's working directory); see pa_map_guard. */
  const char *data_dir;
  /* Threads that work on a tick: scans, and the physics of 256+ robots
   * (the caller + threads - 1 workers started by pa_sim_state_init; results
   * are the same for any count; a state with workers does not survive
   * fork()). 0 = auto: the online CPUs, at most 2 when the initial world
   * has <= 8 robots, else at most 8. */
  uint32_t threads;
  /* The caster's vector path (auto = the process default, see
   * pa_sim_simd_set); results are the same on every path. */
  pa_sim_simd simd;
  /* Robots neither collide with nor appear in the scans of each other
   * (independent learning episodes in one world); default false. */
  bool ghost_robots;
  /* Robots per team of the built-in SSL worlds (0 = 11 in A, 6 in B). */
  uint32_t ssl_robots;
  /* --dynamics dynamic (OceanSim's bodies): every robot made from a def is a
   * dynamic body, one at the built-in max_force gets
   * PA_SIM_OCEANSIM_MAX_FORCE, one without thrusters gets "port" and
   * "starboard" (aft, half of it each); default PA_DYN_KINEMATIC = as the
   * world says. */
  int dynamics;
  /* [ms] of sim time a robot commanded over the SSL protocol keeps its
   * last command; then it stops (0 = keeps it for ever). Default 100. */
  uint32_t ssl_cmd_timeout_ms;
} pa_sim_def;
#define PA_SIM_OCEANSIM_MAX_FORCE 200.0 /* [N] the seed's 100 N fits */
pa_sim_def pa_sim_def_default(void);

/* pa-sim's command line (sim_opts.c): the model's def and the map flags. */
typedef struct pa_sim_args {
  pa_sim_def def;
  pa_map_flags map;
  char simd[16];     /* --simd, parsed into def.simd */
  char dynamics[16]; /* --dynamics, parsed into def.dynamics */
} pa_sim_args;
/* pa-sim's flag table (rows, defaults, ranges, cross-flag checks): read by
 * pa-sim's main, the launcher and the docs test. Links without the rest of
 * pa_sim (library pa_sim_opts). */
const pa_opt_table *pa_sim_opts(void);

/* ---- model (read-only during ticks; pa_sim_set_grid and pa_sim_set_world
 * replace it between them) ------------------------------------------------ */

typedef struct pa_sim_model {
  pa_sim_def def;
  pa_grid grid;            /* owned copy; cells row 0 = south */
  bool unknown_blocks;
  uint64_t *blocked;       /* [height * blocked_words] bit x % 64 of word
                              x / 64 of a row: 1 = blocks motion and rays (a
                              bit per cell: rows scan 64 cells a word) */
  uint32_t blocked_words;  /* words per row: (width + 63) / 64 */
  float *clear;            /* init only (freed after): distance [cells] from
                              the cell centre to the nearest blocked centre */
  uint8_t *march;          /* [(width + 2) * (height + 2)], grid padded by a
                              blocked border: 0 = blocked, else a code of the
                              safe ray step from any point of the cell */
  uint32_t march_w;        /* width + 2 */
  double march_safe[256];  /* code -> safe step [cells] (<= clear - sqrt(2)
                              - slack; 1/4 cell steps up to 32, then 1) */
  int32_t march_safeq[256]; /* the same in 1/1024 cells */
  struct pa_sim_faces *faces; /* the wall faces by tile (the face caster's),
                                 NULL: the march caster alone */
  double cos_yaw, sin_yaw; /* grid origin yaw */
  double dt;               /* [s] 1 / control_hz */
  uint32_t ticks_per_scan; /* round(control_hz / scan_hz), >= 1 */
  uint32_t beam_cap;       /* max beams of any robot (scan buffer stride) */
  /* The initial world (RESET goes back to it). */
  pa_robot_info *robots0;  /* [robot_count0] */
  uint32_t robot_count0;
  pa_obstacle_info *obstacles0; /* [obstacle_count0] */
  uint32_t obstacle_count0;
  pa_robot_info robot_template; /* defaults for SPAWN_ROBOT */
  struct pa_sim_agent_def *agents0; /* [obstacle_count0] the agents'
                                       behaviours, or NULL (sim_agents.c) */
  /* base non-NULL: grid.cells are this read-only mapping of the map segment
   * the model published (pa_sim_shm_publish_map), not a malloc'd copy */
  pa_shm_seg cells_seg;
} pa_sim_model;

/* Builds the model from a world (robots, obstacles, unknown_blocks) and its
 * loaded grid (copied). Adds robots up to d->robots on free cells. Errors
 * name what was wrong ("robot 'r1' at (1, 2) overlaps a wall"). */
int pa_sim_model_init(pa_sim_model *m, const pa_sim_def *d,
                      const pa_world *w, const pa_grid *g, char *err,
                      size_t err_sz);
void pa_sim_model_free(pa_sim_model *m);

/* ---- state (mutable) ----------------------------------------------------- */

enum { PA_SIM_PH_CMD = 0, PA_SIM_PH_PHYSICS, PA_SIM_PH_SENSORS,
       PA_SIM_PH_PUBLISH, PA_SIM_PH_COUNT };

typedef struct pa_sim_hash {
  double cell;             /* [m] bucket size */
  double rmax;             /* [m] largest radius of the robots in it */
  uint32_t mask;           /* table size - 1 */
  uint32_t *start;         /* [mask + 2] */
  uint32_t *items;         /* [max_robots] robot ids sorted by bucket */
  uint32_t *key;           /* [max_robots] bucket of each robot */
  uint32_t cap;
  /* Per item (same order as items), as of the build: the robot's centre,
   * radius and cell (floor(x / cell), floor(y / cell)). */
  double *ix, *iy, *ir;    /* [max_robots] */
  int64_t *icx, *icy;      /* [max_robots] */
  bool valid;              /* false: positions changed since the build */
  /* A scan batch's own (sim_step.c): its scans, in flight while the robots
   * move on, take the bodies from these copies only, never from the
   * robots' records, however few the robots. */
  bool pinned;
  /* pa_sim_int_lhash_build's dense layout: bucket (cy - gy0) * gw + cx -
   * gx0 for the gw x gh cells around the robots (no aliasing, rows in
   * order; icx, icy unset). */
  bool dense;
  int64_t gx0, gy0;
  uint32_t gw, gh;
  /* pa_sim_int_lhash_plan: 1 = to build (at h->cell) by the first scan
   * that needs it, 2 = being built, 0 = built or not planned (atomic). */
  int build;
} pa_sim_hash;

typedef struct pa_sim_pool pa_sim_pool; /* scan workers (sim_pool.c) */
typedef struct pa_sim_rec pa_sim_rec;   /* export_dataset (sim_rec.c) */

/* A differential robot's wheel separation when none is given. */
#define PA_WHEEL_BASE_PER_RADIUS 1.6

/* Where a robot's newest published scan is (observation blocks). */
typedef struct pa_sim_scan_ref {
  uint64_t rec;   /* its scan ring record; 0: none yet */
  uint32_t count; /* its beams */
  uint32_t reserved;
} pa_sim_scan_ref;

typedef struct pa_sim_state {
  uint64_t tick;           /* ticks since the simulation started */
  double sim_time;         /* [s] */
  /* The scan schedule counts from here: robot i scans when
   * (tick - scan_tick0 + i) % ticks_per_scan == 0; reset sets it to the
   * tick, so a reset world scans as a fresh one. */
  uint64_t scan_tick0;
  bool paused;
  double speed;            /* 0 = as fast as possible */
  uint32_t cap_robots, cap_obstacles;
  uint32_t robot_count;    /* highest active robot + 1 */
  uint32_t obstacle_count; /* highest active obstacle + 1 */
  pa_robot_info *info;     /* [cap_robots] static properties */
  pa_robot_state *rs;      /* [cap_robots] dynamic state */
  pa_obstacle_info *obs;   /* [cap_obstacles] */
  bool world_dirty;        /* info/obs changed since last published */
  /* Sensors: the latest scan of each robot. */
  float *ranges;           /* [cap_robots * beam_cap] [m] */
  uint32_t *scan_due;      /* [cap_robots] robots that scanned this tick */
  pa_sim_scan_ref *scan_rec; /* [cap_robots] each robot's newest published
                              * scan in the scan ring (rec 0: none) */
  uint32_t scan_due_count;
  struct pa_sim_scratch *scratch; /* pa_sim_scan's beam tables (sim_int.h) */
  pa_sim_hash hash;        /* robot broad phase, rebuilt every tick */
  pa_sim_hash lhash;       /* coarse robot buckets for laser queries */
  int64_t phase_ns[PA_SIM_PH_COUNT]; /* cost of the last tick per phase */
  uint64_t bumps;          /* robot-ticks limited by a collision */
  uint32_t threads;        /* scan threads in use (def.threads resolved) */
  pa_sim_pool *pool;       /* NULL when threads == 1 */
  struct pa_sim_motion *motion; /* [cap_robots] this tick's planned moves */
  uint64_t alone_moves;    /* robot-ticks moved in parallel (statistics) */
  struct pa_sim_strips *strips; /* the moves' partition by space (sim_int.h) */
  /* Overlapped scans (pa_sim_run running free or inside a STEP, with
   * threads): one robot's scan is cast on the workers during the next ticks
   * and completes at the latest two scans later; many robots' scans of a
   * tick are cast while the next tick's robots move and complete before
   * its scans (pa_sim_scans_settle; sim_step.c). */
  bool defer_scans;        /* allows it for the next ticks (pa_sim_run
                            * sets it; a caller of pa_sim_step may too, and
                            * then reads ranges after pa_sim_scans_settle) */
  struct pa_sim_late *late; /* NULL without threads */
  uint64_t late_scans;     /* scans overlapped so far (statistics) */
  bool inline_scans;       /* this tick's scans on the calling thread only
                            * (pa_sim_run: a lockstep STEP of a few robots,
                            * where workers would only take the cores the
                            * gateway and the client wait for) */
  pa_sim_rec *rec;         /* export_datasets: the newest (recording or
                            * being written by its thread), then older ones
                            * still being written; NULL = none */
  pa_stack *stack;         /* pa_sim_run's (export_dataset's cameras), or
                            * NULL */
  bool ghosts;             /* def.ghost_robots: robots ignore each other */
  struct pa_sim_ssl *ssl;  /* the SSL field, ball and kickers, or NULL */
  struct pa_sim_dyn *dyn;  /* [cap_robots] dynamic bodies' inputs (sim_dyn.c) */
  struct pa_sim_agent *agents; /* [cap_obstacles] agents' behaviour state */
  uint32_t agent_count;        /* active agents (sim_agents.c) */
  struct pa_sim_agent_grid *agent_grid; /* their buckets (sim_agents.c) */
  void *keep;       /* the sim-keep object's mapping, or NULL (sim_keep.c) */
  size_t keep_size; /* its bytes */
  bool keep_stale;  /* a command changed state it did not keep (sim_keep.c) */
} pa_sim_state;

/* Scan threads for def.threads and an initial world of `robots` robots:
 * threads when > 0, else the online CPUs, at most 2 for <= 8 robots and at
 * most 8 otherwise. */
uint32_t pa_sim_threads_resolve(uint32_t threads, uint32_t robots);

/* Allocates the state for the model and puts it in the initial world (and
 * starts the scan threads, see pa_sim_threads_resolve). */
int pa_sim_state_init(const pa_sim_model *m, pa_sim_state *s, char *err,
                      size_t err_sz);
void pa_sim_state_free(pa_sim_state *s);
/* Back to the world's initial state: robots, obstacles, poses, commands,
 * odometry, noise generators. tick, sim_time and scan seqs continue. */
void pa_sim_reset(const pa_sim_model *m, pa_sim_state *s);

/* Replaces the map (the model's grid and fields) under a running world:
 * robots keep their poses where they fit; the others move to free places
 * (seeded: the same world, seed and tick give the same places), stopped,
 * odometry following as after a teleport. The world as it then stands
 * becomes the initial world that RESET goes back to. All or nothing: on an
 * error (a map the model refuses, no place for a robot) nothing changes.
 * moved (may be NULL) = the robots moved. Scans in flight must be complete
 * (pa_sim_scans_settle(wait)). */
int pa_sim_set_grid(pa_sim_model *m, pa_sim_state *s, const pa_grid *g,
                    uint32_t *moved, char *err, size_t err_sz);
/* Replaces the world: the model is rebuilt from w on its loaded grid g (the
 * same settings; no extra robots) and the state reset to it (tick, sim time
 * and scan seqs run on, as after RESET). All or nothing: a world the model
 * refuses (a robot on a wall, too many robots, more laser beams than the
 * state holds) changes nothing. */
int pa_sim_set_world(pa_sim_model *m, pa_sim_state *s, const pa_world *w,
                     const pa_grid *g, char *err, size_t err_sz);

/* The two halves of pa_sim_set_grid / pa_sim_set_world, so the costly one
 * can run off the tick: the new model built from the settings alone (d and
 * unknown_blocks copied from the running model; w NULL for a new grid under
 * the running world), on any thread; then taken between two ticks (nm is
 * consumed either way; the same checks and all-or-nothing as above). */
int pa_sim_model_prepare(const pa_sim_def *d, bool unknown_blocks,
                         const pa_world *w, const pa_grid *g, pa_sim_model *nm,
                         char *err, size_t err_sz);
int pa_sim_set_grid_model(pa_sim_model *m, pa_sim_state *s, pa_sim_model *nm,
                          uint32_t *moved, char *err, size_t err_sz);
int pa_sim_set_world_model(pa_sim_model *m, pa_sim_state *s, pa_sim_model *nm,
                           char *err, size_t err_sz);

/* One tick: limits + kinematics + collisions + odometry, then scans for the
 * robots due (listed in s->scan_due). Advances tick and sim_time. */
void pa_sim_step(const pa_sim_model *m, pa_sim_state *s);

/* Completes overlapped scans, oldest first: those whose beams are all
 * cast, or all of them (waiting) when wait. Returns whether completed scans
 * wait for their records (either publish below writes them).
 * pa_sim_apply completes all first. */
bool pa_sim_scans_settle(const pa_sim_model *m, pa_sim_state *s, bool wait);

/* Ends an export_dataset recording early (its thread then writes the rest
 * and packs). */
void pa_sim_rec_stop(pa_sim_state *s);
/* Ends it and waits for every export thread (no camera frames waited
 * for, no packing); pa_sim_state_free then frees them (pa_sim_run first
 * sends the replies of the requests that waited). */
void pa_sim_rec_close(pa_sim_state *s);

/* ---- commands ------------------------------------------------------------ */

/* Applies one command (except STEP's ticks, which the driver runs) and fills
 * the reply (status, msg, tick, sim_time, a = pose where it applies).
 * Returns the status. */
pa_status pa_sim_apply(const pa_sim_model *m, pa_sim_state *s,
                       const pa_cmd *c, pa_reply *r);

/* ---- geometry (used by the step, exposed for tests and benchmarks) ------- */

/* Clearance of a disc of radius r at (x, y): the smallest distance from the
 * centre to a wall cell, obstacle or other robot (skip = robot to ignore, or
 * UINT32_MAX), minus r. Negative = overlap. (nx, ny) = unit normal pointing
 * away from the nearest body (may be NULL). Exact below margin; above it the
 * value is only a lower bound. */
double pa_sim_clearance(const pa_sim_model *m, const pa_sim_state *s,
                        uint32_t skip, double x, double y, double r,
                        double margin, double *nx, double *ny);
/* True if robot `id`'s footprint at (x, y) would overlap anything. */
bool pa_sim_overlaps(const pa_sim_model *m, const pa_sim_state *s,
                     uint32_t id, double x, double y);

/* Distance [m] along the ray from (x, y) with direction angle `a` to the
 * first blocked grid cell (the grid's outside counts as blocked), or
 * range_max when none is closer. _fast marches the distance field and
 * finishes with an exact traversal; _plain is the reference Amanatides-Woo
 * traversal. Both return the same value. */
double pa_sim_cast_fast(const pa_sim_model *m, double x, double y, double dx,
                        double dy, double range_max);
double pa_sim_cast_plain(const pa_sim_model *m, double x, double y, double dx,
                         double dy, double range_max);

/* n rays from one point (unit directions dx[i], dy[i], world frame) into
 * out[i] [m], as pa_sim_cast_fast each but cast together (the scan's path,
 * vectorised where the CPU allows). */
void pa_sim_cast_fan(const pa_sim_model *m, double x, double y,
                     const double *dx, const double *dy, uint32_t n,
                     double range_max, double *out);

/* Which caster casts the fans of a scan. Every path gives the plain
 * traversal's ranges bit for bit (tests compare them), so the choice changes
 * speed only, never a result or the determinism hash. */
const char *pa_sim_simd_name(pa_sim_simd p);
/* "auto", "avx512", "avx2", "portable", "scalar" -> *p; 0, or -1 (unknown
 * name, *p unchanged). */
int pa_sim_simd_parse(const char *name, pa_sim_simd *p);
/* Whether this build and CPU have path p (auto and scalar always). */
bool pa_sim_simd_has(pa_sim_simd p);
/* Whether this CPU has the instructions of path p (what the build has aside;
 * pa_sim_opts, so the launcher can check --simd). */
bool pa_sim_simd_cpu_has(pa_sim_simd p);
/* The path of models whose def.simd is auto (default: auto, the fastest the
 * CPU has); call it while no scan runs. 0, or -1 when this CPU or build
 * lacks p (nothing changed). */
int pa_sim_simd_set(pa_sim_simd p);
/* Whether fans of rays in angle order (laser scans) take the face caster
 * (the grid's wall faces, nearest crossing by ray; sim_cast_face.h) before
 * the march caster; on by default, off to measure or test the march caster
 * alone. The results are the same. Call it while no scan runs. */
void pa_sim_faces_set(bool on);
bool pa_sim_faces_on(void);
/* The calling thread's counts so far: fans the face caster cast, and rays of
 * them it handed to the scalar caster (close to a corner). */
void pa_sim_faces_counts(uint64_t *fans, uint64_t *closes);
/* The path m's scans take (NULL: the process default), auto resolved; a
 * def.simd the CPU lacks falls back to auto (pa-sim refuses it at start). */
pa_sim_simd pa_sim_simd_path(const pa_sim_model *m);

/* Casts the full scan of robot `id` at its current pose into out[beams]
 * (walls, obstacles, other robots, noise). Uses and advances the robot's
 * noise generator. */
void pa_sim_scan(const pa_sim_model *m, pa_sim_state *s, uint32_t id,
                 float *out);

/* Robot id by name or decimal index; UINT32_MAX if none. */
uint32_t pa_sim_find_robot(const pa_sim_state *s, const char *name);

/* Normal(0, 1) and uniform [0, 1) from a 64-bit generator state. */
double pa_sim_rng_normal(uint64_t *state);
double pa_sim_rng_uniform(uint64_t *state);

/* Wraps an angle to [-pi, pi]. */
double pa_sim_wrap(double a);

/* ---- shared memory driver ------------------------------------------------ */

/* Publishes the map to the stack (map segment); the model then reads its
 * cells from there (read-only) and frees its own copy, so the process holds
 * no second copy of them and maps their pages only when it reads them
 * (recording, saving, snapshots). If the segment cannot be mapped back the
 * model keeps its copy. */
int pa_sim_shm_publish_map(pa_sim_model *m, pa_stack *st, char *err,
                           size_t err_sz);
/* Writes the world snapshot (robots, obstacles) under the seqlock. */
void pa_sim_shm_publish_world(const pa_sim_state *s, pa_stack *st);
/* After a command that changed the state (or at start): the pa_tick +
 * robot states to the state ring again, and completed overlapped scans to
 * the scan ring; not the tick's due scans, which its own publish wrote. */
void pa_sim_shm_publish_state(const pa_sim_model *m, pa_sim_state *s,
                              pa_stack *st);
/* A tick's: its pa_tick + robot states to the state ring and its due scans
 * (after completed overlapped ones) to the scan ring, with the records'
 * wall time given (CLOCK_MONOTONIC [ns], just read by the caller). */
void pa_sim_shm_publish_tick_at(const pa_sim_model *m, pa_sim_state *s,
                                pa_stack *st, int64_t wall_ns);
/* Writes the overlapped scans that completed (pa_sim_scans_settle) to the
 * scan ring, if any (both publishes above do too). */
void pa_sim_shm_publish_late(const pa_sim_model *m, pa_sim_state *s,
                             pa_stack *st);
/* The observation block of robots [first, first + count) (their states
 * now and newest published scans, each as `sectors` sectors when not 0:
 * pa_obs_sectors) into the observation segment o, by the scan threads: its
 * seq, or 0 when it cannot (bad range, too wide). sim_obs.c. */
uint64_t pa_sim_obs_write(pa_sim_state *s, pa_stack *st, pa_obs_seg *o,
                          uint32_t first, uint32_t count, uint32_t sectors);
/* Scan ring record rec (pa-sim's own, read while it writes nothing): its
 * ranges with its header in *h, or NULL when the ring no longer holds it
 * whole. sim_obs.c. */
const float *pa_sim_scan_record(const pa_ring *scan, uint64_t rec, pa_scan *h);
/* If the stack holds a live world (state records + robots in the snapshot),
 * loads it into s and returns 1; 0 when there is nothing to resume; negative
 * with err on a malformed record. */
int pa_sim_shm_resume(const pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                      char *err, size_t err_sz);

/* After a resume: if the stack's map segment holds another map than the
 * model's (one set at run time), the model takes it (pa_sim_set_grid).
 * Returns 1 if it did, 0 if not, -1 with err on an error. */
int pa_sim_shm_resume_map(pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                          char *err, size_t err_sz);
/* A restarted pa-sim: if ctl->cmd_inflight is set, answers that command with
 * busy and pops it without applying it. Returns 1 if it did. */
int pa_sim_shm_answer_inflight(const pa_sim_state *s, pa_stack *st);

/* The sim-keep object (sim_keep.c): what pa-sim alone holds (held forces,
 * thrusters and pulses, agents' behaviour state), written after every command
 * and every tick that changed it so a restarted pa-sim goes on with it. Open
 * maps (creates) it and, with resume (the world was resumed from the segments),
 * takes what a previous pa-sim of this instance wrote: 0, or -1 (warned; runs
 * without). */
int pa_sim_keep_open(const pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                     bool resume);
void pa_sim_keep_write(pa_sim_state *s);
/* After a tick: writes only when the tick (pulses, agents) or a command not
 * kept by pa_sim_keep_write changed what is held. */
void pa_sim_keep_tick(pa_sim_state *s);
void pa_sim_keep_close(pa_sim_state *s);

/* The process loop: consumes commands at the start of each tick, runs ticks
 * at control_hz * speed on absolute deadlines (bounded catch-up), blocks on
 * the command queue while paused, answers STEP after its ticks, publishes
 * every tick and the health block. Returns when *stop becomes non-zero. */
void pa_sim_run(pa_sim_model *m, pa_sim_state *s, pa_stack *st,
                volatile sig_atomic_t *stop);

/* ---- RoboCup SSL (sim_ssl.c, sim_ball.c; docs/ssl.md) ---------------------
 */

/* 'A' / 'B' for the built-in world names "ssl-a" / "ssl-b", else 0. */
char pa_sim_ssl_world_division(const char *world);
/* The built-in SSL world of a division: the field's walls as the grid,
 * per_team robots b0.. and y0.. (0 = 11 in A, 6 in B) in their halves. */
int pa_sim_ssl_world(char division, uint32_t per_team, pa_world *w, pa_grid *g,
                     char *err, size_t err_sz);
/* A world file with an ssl: section: its field as the grid g and, when
 * the file lists no robots, the built-in formation (w's robots replaced). */
int pa_sim_ssl_world_file(pa_world *w, pa_grid *g, char *err, size_t err_sz);
/* Turns the state's SSL side on (a ball at the centre); freed with the
 * state. */
int pa_sim_ssl_enable(pa_sim_state *s, char division, char *err, size_t err_sz);
void pa_sim_ssl_free(pa_sim_state *s);
/* The state's SSL side for a world set at run time: division 0 turns it
 * off; the same or another division starts afresh (a ball at the centre). */
int pa_sim_ssl_set_field(pa_sim_state *s, char division, char *err,
                         size_t err_sz);

#ifdef __cplusplus
}
#endif
#endif /* PA_SIM_H */
