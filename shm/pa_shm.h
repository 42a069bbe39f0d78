/*
 * pa_shm.h - the shared-memory contract of playarea.
 *
 * The only public header of the pa_shm library and the only code that knows
 * the shared layout. Three layers:
 *
 *   1. Segments: POSIX shm objects "/playarea.<instance>.<segment>", mode
 *      0600, each starting with a pa_shm_header that attachers validate.
 *   2. Primitives placed inside segments: a single-writer ring of records
 *      (seqlock per slot, never blocks the writer, per-reader semaphores for
 *      wake-ups) and a bounded single-producer/single-consumer queue.
 *   3. The stack layout: the segments one running instance uses (ctl, state,
 *      scan, camera, map) and the record types that travel through them.
 *
 * No pointers are stored in shared memory, only offsets; every process maps
 * segments at its own addresses. Nothing holds a lock across a crash: a
 * process killed at any instruction leaves every segment readable.
 *
 * Functions return 0 (or a documented non-negative value) on success and a
 * negative PA_SHM_E* value on failure, with human text in the caller's
 * err buffer where one is taken.
 */
#ifndef PA_SHM_H
#define PA_SHM_H

#include <semaphore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

enum {
  PA_SHM_OK = 0,
  PA_SHM_EINVAL = -1,   /* bad argument (size 0, record too large, ...) */
  PA_SHM_ESYS = -2,     /* a system call failed; errno is kept */
  PA_SHM_EEXIST = -3,   /* segment exists (create) */
  PA_SHM_ENOENT = -4,   /* segment does not exist (attach) */
  PA_SHM_EMISMATCH = -5,/* header differs: magic, version, kind or a size */
  PA_SHM_EMPTY = -6,    /* ring/queue: nothing to read */
  PA_SHM_EFULL = -7,    /* queue full: reported to the producer */
  PA_SHM_ETIMEDOUT = -8,/* wait timed out */
  PA_SHM_ETOOBIG = -9,  /* record larger than the reader's buffer */
  PA_SHM_ESTALE = -10,  /* segment's owner pid is dead */
  PA_SHM_ENOTREADY = -11, /* segment exists but its creator has not
                             published it yet: retry shortly */
};

/* Short name of a PA_SHM_* value ("full", "not ready", ...). */
const char *pa_shm_strerror(int code);

/* ------------------------------------------------------------------------ */
/* 1. Segments                                                               */

#define PA_SHM_MAGIC 0x48534150u /* "PASH" little-endian */
#define PA_SHM_LAYOUT_VERSION 1u
#define PA_SHM_NAME_MAX 96
#define PA_SHM_INSTANCE_MAX 48 /* [A-Za-z0-9_-], 1..47 chars */
#define PA_SHM_MAX_SIZES 8
#define PA_SHM_SIZE_ANY UINT64_MAX /* in expect_sizes[]: not checked */

/* At offset 0 of every segment. */
typedef struct pa_shm_header {
  uint32_t magic;        /* PA_SHM_MAGIC */
  uint32_t version;      /* PA_SHM_LAYOUT_VERSION */
  uint32_t kind;         /* PA_SEG_* */
  uint32_t header_size;  /* sizeof(pa_shm_header) */
  uint64_t total_size;   /* [bytes] of the whole mapping */
  uint64_t sizes[PA_SHM_MAX_SIZES]; /* array sizes, meaning per kind */
  int32_t owner_pid;     /* process that created the instance (launcher) */
  uint32_t ready;        /* set to 1 (release) once the creator initialised it */
  uint64_t boot_id;      /* random id of this instance's creation */
  char instance[PA_SHM_INSTANCE_MAX];
} pa_shm_header;

typedef struct pa_shm_seg {
  char name[PA_SHM_NAME_MAX]; /* "/playarea.<instance>.<segment>" */
  void *base;                 /* mapping; base begins with pa_shm_header */
  size_t size;                /* [bytes] */
} pa_shm_seg;

/* World snapshots (pa-sim, PA_OP_*_SNAPSHOT) are objects of the instance,
 * segment "snap-<name>": names of 1..PA_SNAPSHOT_NAME_MAX of [A-Za-z0-9_-],
 * at most PA_SNAPSHOTS_MAX per instance; pa_stack_unlink removes them. */
#define PA_SNAPSHOT_NAME_MAX 31
#define PA_SNAPSHOTS_MAX 64
bool pa_snapshot_name_ok(const char *name);

/* Validates instance ("p9000", "test-1234") and writes the object name. */
int pa_shm_name(char *out, size_t out_sz, const char *instance,
                const char *segment, char *err, size_t err_sz);

/* Creates (O_EXCL), sizes and maps a segment and fills its header with
 * owner_pid = getpid(). total_size includes the header. The caller
 * initialises the body, then calls pa_shm_publish(). */
int pa_shm_create(pa_shm_seg *seg, const char *name, uint32_t kind,
                  const uint64_t sizes[PA_SHM_MAX_SIZES], size_t total_size,
                  uint64_t boot_id, char *err, size_t err_sz);
void pa_shm_publish(pa_shm_seg *seg); /* header.ready = 1 (release) */

/* Maps an existing segment and validates its header: magic, version, kind,
 * total size against the object size, and each of expect_sizes (if the array
 * is not NULL; entries equal to PA_SHM_SIZE_ANY are skipped). On mismatch err
 * says which field differs, e.g.
 * "/playarea.p9000.ctl: layout version is 2, expected 1". A segment whose
 * creator has not published it within ~100 ms gives PA_SHM_ENOTREADY. */
int pa_shm_attach(pa_shm_seg *seg, const char *name, uint32_t kind,
                  const uint64_t expect_sizes[PA_SHM_MAX_SIZES], char *err,
                  size_t err_sz);
void pa_shm_detach(pa_shm_seg *seg);
int pa_shm_unlink(const char *name); /* ENOENT is not an error */

/* True when the owner pid no longer exists (kill(pid, 0) == ESRCH). */
bool pa_shm_is_stale(const pa_shm_header *h);

/* Random 64-bit id (getrandom), never 0. */
uint64_t pa_shm_new_boot_id(void);

/* CLOCK_MONOTONIC in nanoseconds; the time base of every *_ns field. */
int64_t pa_now_ns(void);

/* Waits on a shared semaphore (e.g. pa_ctl.render_wake) for at most
 * timeout_ns on CLOCK_MONOTONIC, retrying on EINTR; timeout_ns < 0 waits
 * forever. 0, PA_SHM_ETIMEDOUT or PA_SHM_ESYS. */
int pa_shm_sem_wait(sem_t *sem, int64_t timeout_ns);

/* ------------------------------------------------------------------------ */
/* 2a. Ring: one writer, any number of readers, overwrite-oldest            */

/*
 * Slots of max_record bytes; record n (n = 1, 2, ...) goes to slot
 * (n - 1) % slot_count. Each slot carries a seqlock word: the writer marks it
 * busy, copies, then stores n (release). A reader copies and re-checks; a
 * slot that changed under it, or that a killed writer left busy, is skipped
 * and counted as missed. The writer never waits for anybody.
 *
 * Readers that want to block register and get their own process-shared
 * semaphore; the writer posts every registered reader's semaphore after each
 * record (at most one pending post per reader, so a reader that crashed or is
 * stopped costs the writer one sem_getvalue per record and nothing grows).
 * Reader slots whose pid is dead are reclaimed on the next registration.
 */
typedef struct pa_ring pa_ring; /* lives inside a segment */

/* Bytes needed for a ring with these sizes (cache-line aligned). */
size_t pa_ring_bytes(uint32_t slot_count, uint32_t max_record,
                     uint32_t max_readers);
/* Initialises a ring in mem (creator only). */
int pa_ring_init(void *mem, uint32_t slot_count, uint32_t max_record,
                 uint32_t max_readers);
/* Checks a mapped ring's own sizes against the space it was given. */
int pa_ring_check(const void *mem, size_t avail, char *err, size_t err_sz);

uint32_t pa_ring_max_record(const pa_ring *r);
uint32_t pa_ring_slot_count(const pa_ring *r);

/* Writer. Returns the record's sequence number (>= 1), or PA_SHM_EINVAL if
 * len > max_record. A restarted writer continues from the segment's head. */
int64_t pa_ring_write(pa_ring *r, const void *rec, uint32_t len);
/* Zero-copy variant for large records: begin returns the slot to fill (NULL
 * if len is too large), commit publishes it and wakes readers. */
void *pa_ring_write_begin(pa_ring *r, uint32_t len);
int64_t pa_ring_write_commit(pa_ring *r);

/* Number of records written so far (the latest record's seq). */
uint64_t pa_ring_head(const pa_ring *r);

/* Copies the newest readable record. PA_SHM_EMPTY if none yet. */
int pa_ring_read_latest(const pa_ring *r, void *buf, uint32_t cap,
                        uint32_t *len, uint64_t *seq);

/* A reader's own position. next = seq of the next record it wants.
 * missed counts records it never saw (lapped or torn). */
typedef struct pa_ring_cursor {
  uint64_t next;
  uint64_t missed;
} pa_ring_cursor;

/* Cursor that starts after the current head (only new records). */
pa_ring_cursor pa_ring_cursor_now(const pa_ring *r);
/* Copies the record at c->next, or the oldest still readable one if the
 * writer lapped the cursor (adding the gap to c->missed). PA_SHM_EMPTY when
 * the cursor is at the head. PA_SHM_ETOOBIG when the record exceeds cap:
 * *len gets its size and the cursor stays, so a larger buffer can retry.
 * A cursor {0, 0} starts at the oldest readable record. */
int pa_ring_read_next(const pa_ring *r, pa_ring_cursor *c, void *buf,
                      uint32_t cap, uint32_t *len, uint64_t *seq);

/* Registers this process as a blocking reader; returns the reader index
 * (>= 0) or PA_SHM_EFULL when every reader slot is live. */
int pa_ring_reader_register(pa_ring *r);
void pa_ring_reader_unregister(pa_ring *r, int reader);
/* Blocks until a record is written after the last wake (or one is already
 * pending), or timeout_ns passes (< 0 = forever). 0 or PA_SHM_ETIMEDOUT. */
int pa_ring_wait(pa_ring *r, int reader, int64_t timeout_ns);
/* The reader's semaphore, for threads that bridge it into an event loop. */
sem_t *pa_ring_reader_sem(pa_ring *r, int reader);

/* ------------------------------------------------------------------------ */
/* 2b. Queue: bounded, one producer, one consumer, fixed-size records        */

/*
 * The consumer peeks, works, then pops, so a consumer killed mid-command
 * finds the same command at the front after a restart (see
 * pa_ctl.cmd_inflight). A full queue makes push fail; it never blocks and
 * never drops silently. The consumer can block on the queue's semaphore.
 */
typedef struct pa_queue pa_queue;

size_t pa_queue_bytes(uint32_t capacity, uint32_t record_size);
int pa_queue_init(void *mem, uint32_t capacity, uint32_t record_size);
int pa_queue_check(const void *mem, size_t avail, char *err, size_t err_sz);

int pa_queue_push(pa_queue *q, const void *rec);  /* 0 or PA_SHM_EFULL */
/* Copies the front record; returns its position (>= 0, monotonic count of
 * records ever pushed before it) or PA_SHM_EMPTY. */
int64_t pa_queue_peek(const pa_queue *q, void *rec);
void pa_queue_pop(pa_queue *q);
uint32_t pa_queue_count(const pa_queue *q);
uint32_t pa_queue_space(const pa_queue *q);
/* Consumer: block until non-empty or timeout (< 0 = forever). */
int pa_queue_wait(pa_queue *q, int64_t timeout_ns);
sem_t *pa_queue_sem(pa_queue *q);

/* ------------------------------------------------------------------------ */
/* 3. The stack: one running instance                                       */

enum pa_seg_kind {
  PA_SEG_CTL = 1,    /* pa_ctl + world snapshot + queues + health */
  PA_SEG_STATE = 2,  /* ring of pa_tick records (all robots, every tick) */
  PA_SEG_SCAN = 3,   /* ring of pa_scan records (one robot's scan) */
  PA_SEG_CAMERA = 4, /* ring of pa_frame records (one robot's image) */
  PA_SEG_MAP = 5,    /* pa_map_block + cells; created by pa-sim */
  PA_SEG_TEST = 99,  /* free for tests */
};

enum pa_proc {
  PA_PROC_LAUNCH = 0,
  PA_PROC_SIM = 1,
  PA_PROC_RENDER = 2,
  PA_PROC_NETGW = 3,
  PA_PROC_COUNT = 4,
};

/* Exit code meaning "configuration error, do not restart me". */
#define PA_EXIT_CONFIG 78 /* EX_CONFIG from sysexits.h */

enum pa_drive { PA_DRIVE_DIFF = 0, PA_DRIVE_OMNI = 1 };
enum pa_shape { PA_SHAPE_BOX = 0, PA_SHAPE_CIRCLE = 1 };

/* Status of a command, mapped 1:1 to PROTOCOL.md section 4 error codes by
 * pa_status_code(). */
typedef enum pa_status {
  PA_OK = 0,
  PA_ERR_UNKNOWN_TYPE,
  PA_ERR_UNKNOWN_ACTION,
  PA_ERR_INVALID_MESSAGE,
  PA_ERR_INVALID_ACTION_SHAPE,
  PA_ERR_UNKNOWN_ROBOT,
  PA_ERR_UNKNOWN_OBJECT,
  PA_ERR_UNSUPPORTED_CONTROL_SCHEME,
  PA_ERR_SPAWN_FAILED,
  PA_ERR_BLOCKED_POSE,
  PA_ERR_BATCH_LIMIT,
  PA_ERR_TOO_LONG,
  PA_ERR_BUSY,
  PA_ERR_NOT_AUTHORIZED,
  PA_STATUS_COUNT
} pa_status;
const char *pa_status_code(pa_status st); /* "unknown_robot", ... */

/* Sizes of an instance, fixed when the launcher creates it. */
typedef struct pa_stack_def {
  char instance[PA_SHM_INSTANCE_MAX];
  uint32_t max_robots;     /* 256 */
  uint32_t max_obstacles;  /* 1024 */
  uint32_t max_beams;      /* 4096 */
  uint32_t max_cam_width;  /* 1920 [px] */
  uint32_t max_cam_height; /* 1080 [px] */
  uint32_t state_slots;    /* 64 ticks */
  uint32_t scan_slots;     /* 0 = max(64, 2 * max_robots) */
  uint32_t camera_slots;   /* 8 frames */
  uint32_t cmd_capacity;   /* 1024 commands; replies get the same */
  uint32_t max_readers;    /* 8 blocking readers per ring */
} pa_stack_def;
pa_stack_def pa_stack_def_default(void);

/* Health and timings of one process; written by that process only (except
 * restarts/last_exit/hang_ms, written by the launcher). Monitoring data:
 * readers may see a field a tick old. */
typedef struct pa_health {
  int32_t pid;             /* 0 = not running */
  uint32_t ready;          /* 1 once serving */
  int64_t start_ns;        /* pa_now_ns() at start */
  int64_t heartbeat_ns;    /* pa_now_ns() at the last loop iteration; advances
                            * at least every 250 ms while the loop runs, idle
                            * or not (the launcher's watchdog reads it); set
                            * ahead before a step known to block (a map load) */
  uint32_t restarts;       /* launcher: times restarted */
  int32_t last_exit;       /* launcher: exit code, or -signal */
  uint64_t loops;          /* loop iterations (ticks, frames, events) */
  uint64_t overruns;       /* missed deadlines */
  int64_t period_p50_ns;   /* loop period statistics over the last window */
  int64_t period_p99_ns;
  int64_t period_max_ns;
  double phase_ms[4];      /* per-phase cost [ms], meaning per process */
  uint64_t frames_sent;    /* netgw: datagrams; render: frames */
  uint64_t bytes_sent;
  uint64_t frames_dropped; /* frames not sent/rendered (overload) */
  uint32_t clients;        /* netgw: connected TCP clients */
  uint32_t hang_ms;        /* launcher: watchdog limit on the heartbeat's age
                            * [ms], 0 = not watched (was reserved: same layout) */
  uint64_t counters[6];    /* process specific */
} pa_health;

/* World snapshot: static properties of a robot (written by pa-sim). */
typedef struct pa_robot_info {
  char name[32];
  uint32_t active;         /* 0 = free slot */
  uint32_t gen;            /* bumped on spawn into this slot */
  uint32_t drive;          /* enum pa_drive */
  float radius;            /* footprint [m] */
  float height;            /* body height [m] */
  float head_height;       /* camera height above floor [m] */
  uint8_t colour[4];       /* RGBA */
  float max_v, max_vy, max_w;    /* [m/s, m/s, rad/s] */
  float acc_v, dec_v;      /* linear speed-up / brake [m/s^2] */
  float acc_w, dec_w;      /* angular [rad/s^2] */
  float head_limit;        /* |head| <= head_limit [rad] */
  float max_head_rate;     /* [rad/s] */
  uint32_t laser_beams;
  float laser_range_min, laser_range_max; /* [m] */
  float laser_noise;       /* Gaussian sigma [m] */
  uint16_t cam_width, cam_height; /* [px] */
  float cam_fov;           /* horizontal [rad] */
  double start_x, start_y, start_theta; /* reset pose */
  float wheel_base;        /* differential: wheel separation [m] */
  uint32_t reserved;
} pa_robot_info;

/* World snapshot: a static obstacle (written by pa-sim). */
typedef struct pa_obstacle_info {
  char name[32];
  uint32_t active, gen;
  uint32_t shape;          /* enum pa_shape */
  float height;            /* [m] */
  double x, y, theta;      /* centre pose [m, m, rad] */
  double size_x, size_y;   /* box full extents [m] */
  double radius;           /* circle [m] */
  uint8_t colour[4];
  uint32_t reserved;
} pa_obstacle_info;

/* Camera demand and sequence per robot. subscribers is written by netgw
 * (and zeroed by a restarted netgw); seq by render. */
typedef struct pa_cam_demand {
  uint32_t subscribers;    /* atomic */
  uint32_t seq;            /* last camera frame seq rendered for this robot */
} pa_cam_demand;

/* The control block, right after the ctl segment's header. Array offsets are
 * from the segment base. */
typedef struct pa_ctl {
  pa_stack_def def;
  /* rates the stack was started with (written by launcher or pa-sim) */
  double control_hz, scan_hz, feedback_hz, camera_hz;
  pa_health health[PA_PROC_COUNT];
  uint32_t tcp_port;        /* netgw: bound port, 0 until listening */
  uint32_t tcp_port_requested;
  /* World snapshot seqlock: odd while pa-sim rewrites robots/obstacles. */
  uint64_t world_seq;
  uint32_t world_gen;       /* bumped on every world change */
  uint32_t map_gen;         /* bumped when the map segment is replaced */
  uint32_t robot_count;     /* highest active robot index + 1 */
  uint32_t obstacle_count;  /* highest active obstacle index + 1 */
  uint64_t seed;
  /* Crash safety for the command being applied: pa-sim stores the queue
   * position + 1 before applying and 0 after replying and popping. */
  uint64_t cmd_inflight;
  sem_t render_wake;        /* netgw posts when camera demand changes */
  uint64_t off_robots;      /* pa_robot_info[max_robots] */
  uint64_t off_obstacles;   /* pa_obstacle_info[max_obstacles] */
  uint64_t off_cam;         /* pa_cam_demand[max_robots] */
  uint64_t off_cmd;         /* pa_queue of pa_cmd */
  uint64_t off_reply;       /* pa_queue of pa_reply */
  uint64_t off_nav;         /* pa_nav_block */
} pa_ctl;

/* Navigation overlays: a client's planned path and waypoints for a robot,
 * drawn by the viewer (pa-netgw writes them, under the seqlock; readers
 * copy and retry). */
#define PA_NAV_OVERLAYS 64       /* robots with a drawing at once */
#define PA_NAV_PATH_MAX 1024     /* points of a path */
#define PA_NAV_WAYPOINTS_MAX 256
typedef struct pa_nav_overlay {
  uint32_t robot;           /* robot index; UINT32_MAX = a free slot */
  uint32_t path_n, wp_n;
  uint32_t reserved;
  float path[PA_NAV_PATH_MAX][2];      /* world x, y [m] */
  float wp[PA_NAV_WAYPOINTS_MAX][2];
} pa_nav_overlay;
typedef struct pa_nav_block {
  uint64_t seq;             /* odd while being written */
  uint32_t gen;             /* bumped on every change */
  uint32_t reserved;
  pa_nav_overlay ov[PA_NAV_OVERLAYS];
} pa_nav_block;

/* Dynamic state of one robot at one tick: everything pa-sim needs to resume
 * after a crash. */
typedef struct pa_robot_state {
  uint32_t id;             /* robot index */
  uint32_t gen;            /* pa_robot_info.gen */
  uint32_t flags;          /* PA_RS_* */
  uint32_t scan_seq;       /* seq of the robot's last scan */
  double x, y, theta;      /* ground truth [m, m, rad] */
  double odom_x, odom_y, odom_theta; /* wheel-odometry estimate */
  double v, vy, w;         /* achieved, robot frame [m/s, m/s, rad/s] */
  double head;             /* pan angle relative to heading [rad] */
  double head_rate;        /* achieved [rad/s] */
  double cmd_v, cmd_vy, cmd_w, cmd_head; /* held command */
  uint32_t cmd_frame;      /* PA_FRAME_ROBOT / PA_FRAME_WORLD (omni) */
  uint32_t reserved;
  uint64_t rng;            /* noise generator state */
} pa_robot_state;

enum {
  PA_RS_ACTIVE = 1u << 0,
  PA_RS_BUMPED = 1u << 1,  /* a collision limited the last tick's motion */
};
enum { PA_FRAME_ROBOT = 0, PA_FRAME_WORLD = 1 };

/* State ring record: one tick, followed by robot_count pa_robot_state. */
typedef struct pa_tick {
  uint64_t tick;           /* ticks since the simulation started */
  double sim_time;         /* [s] */
  int64_t wall_ns;         /* pa_now_ns() when written */
  uint32_t robot_count;
  uint32_t flags;          /* PA_TICK_* */
  double speed;            /* time scale; 0 = as fast as possible */
  uint32_t world_gen;
  uint32_t scan_phase; /* pa-sim's scan_tick0 % ticks_per_scan (resume) */
  /* pa_robot_state robots[robot_count]; */
} pa_tick;
enum { PA_TICK_PAUSED = 1u << 0 };

/* Scan ring record: one robot's scan, followed by count floats [m]. */
typedef struct pa_scan {
  uint64_t tick;
  double sim_time;         /* [s] */
  int64_t wall_ns;
  uint32_t robot;
  uint32_t seq;            /* per robot, +1 per scan, continues on restart */
  double x, y, theta;      /* sensor pose in the world */
  float angle_min, angle_increment; /* [rad] */
  float range_min, range_max;       /* [m] */
  uint32_t count;
  uint32_t reserved;
  /* float ranges[count]; */
} pa_scan;

/* Camera ring record: one image, followed by size bytes RGB888, rows top to
 * bottom. */
typedef struct pa_frame {
  uint64_t tick;           /* tick of the pose it was rendered from */
  double sim_time;
  int64_t wall_ns;
  uint32_t robot;
  uint32_t seq;            /* per robot, +1 per image, continues on restart */
  double x, y, theta, head; /* camera pose rendered from */
  uint16_t width, height;  /* [px] */
  uint32_t size;           /* width * height * 3 */
  /* uint8_t rgb[size]; */
} pa_frame;

/* Commands (netgw -> pa-sim). Unused fields are zero. */
enum pa_op {
  PA_OP_NONE = 0,
  PA_OP_SET_CMD,      /* robot; a = v, vy, w, head_rate; frame in u */
  PA_OP_STOP,         /* robot */
  PA_OP_TELEPORT,     /* robot; a = x, y, theta */
  PA_OP_PAUSE,
  PA_OP_RESUME,
  PA_OP_STEP,         /* u = ticks (>= 1); if flags & PA_CMDF_DRIVE, a = as
                         SET_CMD for robot first */
  PA_OP_RESET,
  PA_OP_SPEED,        /* a[0] = factor; 0 = as fast as possible */
  PA_OP_SPAWN_ROBOT,  /* name; a = x, y, theta, radius; u = drive */
  PA_OP_REMOVE_ROBOT, /* robot */
  PA_OP_SPAWN_OBSTACLE, /* name; u = shape; a = x, y, theta, size_x,
                           size_y | radius, height */
  PA_OP_REMOVE_OBSTACLE, /* name */
  PA_OP_SYNC,         /* no-op; replies with the current tick */
  PA_OP_SET_PROPERTY, /* robot, or the obstacle `name` when robot is
                         UINT32_MAX; u = enum pa_prop; a = its value(s);
                         replies with the value(s) applied in a */
  PA_OP_SAVE_SNAPSHOT, /* name; replies u = robots, a = saved tick,
                          sim_time, obstacles */
  PA_OP_LOAD_SNAPSHOT, /* name; the same reply */
  PA_OP_SET_MAP,      /* path = a map_server YAML, or "" = the built-in
                         default map; replies u = robots moved off walls,
                         a = width, height [cells], resolution [m] */
  PA_OP_GENERATE_MAP, /* a = width, height [m], resolution [m], seed, rooms
                         across, rooms along, clutter [boxes per room]; the
                         same reply */
  PA_OP_SET_SCENARIO, /* path = a world file, "" = the default world; the
                         world replaces robots, obstacles and map; the same
                         reply, a[5] = robots, a[6] = obstacles */
  PA_OP_EXPORT_DATASET, /* name; u = ticks to record from the next one;
                           replies a = first, last tick */
  PA_OP_COUNT
};
#define PA_CMD_PATH_MAX 256 /* pa_cmd.path, with its NUL */

/* Settable properties (PA_OP_SET_PROPERTY). Robots: all but SIZE;
 * obstacles: HEIGHT, COLOUR, RADIUS (circles), SIZE (boxes). */
enum pa_prop {
  PA_PROP_NONE = 0,
  PA_PROP_MAX_V,        /* (0, 100] m/s */
  PA_PROP_MAX_VY,       /* (0, 100] m/s */
  PA_PROP_MAX_W,        /* (0, 100] rad/s */
  PA_PROP_ACC_V,        /* (0, 1000] m/s^2 */
  PA_PROP_DEC_V,
  PA_PROP_ACC_W,        /* (0, 1000] rad/s^2 */
  PA_PROP_DEC_W,
  PA_PROP_HEAD_LIMIT,   /* [0, pi] rad */
  PA_PROP_MAX_HEAD_RATE, /* (0, 100] rad/s */
  PA_PROP_LASER_BEAMS,  /* 1 .. max_beams */
  PA_PROP_LASER_RANGE_MIN, /* [0, range_max) m */
  PA_PROP_LASER_RANGE_MAX, /* (range_min, 1000] m */
  PA_PROP_LASER_NOISE,  /* [0, 100] m */
  PA_PROP_RADIUS,       /* robots (0, 5] m, circles (0, 500] m: no overlap */
  PA_PROP_HEIGHT,       /* (0, 100] m */
  PA_PROP_HEAD_HEIGHT,  /* (0, 10] m */
  PA_PROP_COLOUR,       /* a = r, g, b, alpha in 0..255 */
  PA_PROP_SIZE,         /* boxes: a = size_x, size_y in (0, 1000] m */
  PA_PROP_WHEEL_BASE,   /* robots: (0, 10] m */
  PA_PROP_COUNT
};
enum { PA_CMDF_DRIVE = 1u << 0, PA_CMDF_NO_REPLY = 1u << 1 };

typedef struct pa_cmd {
  uint64_t client_id;      /* netgw connection id */
  uint64_t request_id;     /* netgw-assigned, echoed in the reply */
  uint32_t op;             /* enum pa_op */
  uint32_t flags;          /* PA_CMDF_* */
  uint32_t robot;          /* robot index */
  uint32_t u;              /* op specific integer */
  double a[8];             /* op specific numbers */
  char name[32];           /* op specific name */
  char path[PA_CMD_PATH_MAX]; /* op specific file path */
} pa_cmd;

typedef struct pa_reply {
  uint64_t client_id;
  uint64_t request_id;
  uint32_t op;
  int32_t status;          /* pa_status */
  uint64_t tick;           /* tick after the command took effect */
  double sim_time;         /* [s] */
  double a[8];             /* op specific results (e.g. pose) */
  uint32_t u;              /* op specific (e.g. spawned robot id) */
  uint32_t reserved;
  char msg[96];            /* human text when status != PA_OK */
} pa_reply;

/* Map segment body: grid in ROS nav_msgs/OccupancyGrid values (-1 unknown,
 * 0..100), row 0 = south edge, column 0 = west edge. */
typedef struct pa_map_block {
  uint32_t width, height;  /* [cells] */
  double resolution;       /* [m/cell] */
  double origin_x, origin_y, origin_yaw; /* world pose of cell (0,0)'s corner */
  uint32_t gen;            /* equals pa_ctl.map_gen when current */
  int32_t occupied_min;    /* a cell >= this blocks (map_server's threshold
                              as loaded; 100 in trinary maps; 0 = 100) */
  uint64_t off_cells;      /* from segment base; int8_t[width * height] */
} pa_map_block;

/* A map block's blocking threshold (0 from an older writer = 100, as a
 * trinary map's occupied cells). */
static inline int8_t pa_map_block_occupied_min(const pa_map_block *m) {
  return m->occupied_min > 0 ? (int8_t)m->occupied_min : (int8_t)100;
}

/* Everything one process maps of an instance. */
typedef struct pa_stack {
  pa_shm_seg ctl_seg, state_seg, scan_seg, camera_seg;
  pa_ctl *ctl;
  pa_ring *state, *scan, *camera;
  pa_queue *cmd, *reply;
  pa_robot_info *robots;       /* [ctl->def.max_robots] */
  pa_obstacle_info *obstacles; /* [ctl->def.max_obstacles] */
  pa_cam_demand *cam;          /* [ctl->def.max_robots] */
  pa_nav_block *nav;
} pa_stack;

/* Launcher (and tests): creates every segment of an instance except the map.
 * Fails with PA_SHM_EEXIST if a live instance exists; a stale one (dead
 * owner) is unlinked first and err says so (on success err is "" unless a
 * stale instance was replaced: log it). */
int pa_stack_create(pa_stack *s, const pa_stack_def *d, char *err,
                    size_t err_sz);
/* Processes: maps an existing instance and validates every segment. */
int pa_stack_attach(pa_stack *s, const char *instance, char *err,
                    size_t err_sz);
void pa_stack_detach(pa_stack *s);
/* Removes every segment of the instance (ctl, state, scan, camera, map, and
 * any other /dev/shm/playarea.<instance>.* object). Returns how many were
 * removed (>= 0) or PA_SHM_EINVAL for a bad instance name. */
int pa_stack_unlink(const char *instance);
/* How many /dev/shm objects of the instance have a segment name starting
 * with segment_prefix ("snap-": its snapshots). */
int pa_stack_count_objects(const char *instance, const char *segment_prefix);

enum {
  PA_STACK_NONE = 0,
  PA_STACK_LIVE = 1,
  PA_STACK_STALE = 2,
  PA_STACK_FOREIGN = 3
};
/* Tells whether an instance exists and whether its owner is alive.
 * FOREIGN: an object of it is not ours (another owner uid, or a mode other
 * than 0600, as playarea never makes): its liveness cannot be trusted or
 * seen; pa_stack_create replaces it when it can, else refuses by name. */
int pa_stack_probe(const char *instance);
/* The first foreign object of the instance: its uid, mode bits and owner pid
 * (0 unreadable), and whether that pid runs as that uid (another user's
 * live instance); false when none is foreign. */
bool pa_stack_foreign_info(const char *instance, uint32_t *uid, uint32_t *mode,
                           int32_t *owner, bool *owner_alive);

/* World snapshot seqlock (writer = pa-sim). */
void pa_stack_world_begin(pa_stack *s);
void pa_stack_world_end(pa_stack *s); /* also bumps world_gen */
/* Readers: copy robots/obstacles between these; retry while false. */
uint64_t pa_stack_world_read_begin(const pa_stack *s);
bool pa_stack_world_read_retry(const pa_stack *s, uint64_t seq);
/* Navigation overlays (one writer: pa-netgw). */
void pa_stack_nav_begin(pa_stack *s);
void pa_stack_nav_end(pa_stack *s); /* also bumps gen */
/* One try, never waiting (the viewer calls it per frame): copies the block
 * into out, true if the copy is untorn; false while a write is under way
 * (or a writer died inside one) - try again later. */
bool pa_stack_nav_read(const pa_stack *s, pa_nav_block *out);

/* Map segment: pa-sim publishes (replacing any previous map, bumping
 * ctl->map_gen); readers attach and re-attach when map_gen changes. Attach
 * returns PA_SHM_EINVAL for a map whose geometry can never be used (no
 * cells, resolution not > 0, origin not finite), other errors while there
 * is no usable segment yet. */
int pa_stack_map_publish(pa_stack *s, uint32_t width, uint32_t height,
                         double resolution, double origin_x, double origin_y,
                         double origin_yaw, const int8_t *cells,
                         int occupied_min, char *err, size_t err_sz);
int pa_stack_map_attach(const pa_stack *s, pa_shm_seg *seg,
                        const pa_map_block **map, const int8_t **cells,
                        char *err, size_t err_sz);

/* Default instance name for a TCP port: "p<port>". */
void pa_stack_instance_for_port(char *out, size_t out_sz, unsigned port);

#ifdef __cplusplus
}
#endif
#endif /* PA_SHM_H */
