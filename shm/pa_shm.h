/*
 * pa_shm.h - the shared-memory contract of playarea.
 *
 * The public header of the pa_shm library (with pa_layout.h, which it
 * includes). Three layers:
 *
 *   1. Segments: POSIX shm objects "/playarea.<instance>.<segment>", mode
 *      0600, each starting with a pa_shm_header that attachers validate.
 *   2. Primitives placed inside segments: a single-writer ring of records
 *      (seqlock per slot, never blocks the writer, per-reader semaphores for
 *      wake-ups) and a bounded single-producer/single-consumer queue.
 *   3. The stack: mapping the segments one running instance uses (ctl,
 *      state, scan, camera, map). The record types that travel through them
 *      and the protocol enums are in pa_layout.h, included here so users
 *      include this header alone.
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

#include "pa_layout.h"

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
#define PA_SHM_NAME_MAX 96
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

/* Opens shared-memory object name as shm_open does, always with
 * O_NOFOLLOW|O_NONBLOCK|O_NOCTTY|O_CLOEXEC (a FIFO or device planted under
 * the name opens without waiting for a peer), and refuses anything that is
 * not a regular file by name: "/dev/shm/playarea.x.ctl: not a regular file
 * (a FIFO)". The fd (its fstat in *st when st is not NULL), or -1 with errno
 * (EINVAL for a file of another type, ELOOP for a symlink) and err. */
struct stat;
int pa_shm_open_checked(const char *name, int flags, unsigned mode,
                        struct stat *st, char *err, size_t err_sz);
/* "a FIFO", "a socket", "a character device", "a block device",
 * "a directory", "a symlink", "a regular file" for an st_mode. */
const char *pa_shm_file_type(unsigned st_mode);
int pa_shm_unlink(const char *name); /* ENOENT is not an error */
/* Renames object from over object to (atomically replacing it; holders of
 * either keep their mappings). Linux: through /dev/shm. */
int pa_shm_rename(const char *from, const char *to);

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

/* Record n in place (no copy): its payload and *len, or NULL when the ring no
 * longer holds it. The writer may overwrite it meanwhile: copy what you need,
 * then pa_ring_still(r, n) says whether the copies are of record n, untorn. */
const void *pa_ring_peek(const pa_ring *r, uint64_t n, uint32_t *len);

bool pa_ring_still(const pa_ring *r, uint64_t n);

/* Unmaps the ring's slots from this process only (MADV_DONTNEED on the
 * shared mapping: the segment keeps every record, a later read maps its
 * pages again). A reader that copies records out calls it after a batch, so
 * that its resident memory does not hold every slot it ever read: the
 * writer's mapping already does (issue 37: 8.7 MB of a gateway streaming
 * 1000 robots' scans and odometry). Only for a ring in a MAP_SHARED
 * mapping (every segment is): private memory would lose the records. */
void pa_ring_unmap_slots(const pa_ring *r);

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
/* 2a'. A step's observation block (PAB1, pa_layout.h): its scans' ranges    */

/* One scan of n ranges as `beams` sectors (step_batch's data.beams: a
 * policy's coarse view, made where the scan is still in the caches): out[j]
 * is the least of src[j * n / beams] .. src[(j + 1) * n / beams - 1]
 * (integer division), NaN ignored, NaN only where every one is or the
 * sector is empty (n < beams), as numpy's fmin.reduce over each sector.
 * With beams dividing n, each sector is n / beams consecutive beams.
 * pa_obs.c. */
void pa_obs_sectors(float *out, uint32_t beams, const float *src, uint32_t n);
/* Row row's ranges in a block w floats wide (pa-sim's observation segment,
 * pa-netgw's binary step_batch reply): its robot's newest scan src of n
 * ranges (NULL: none yet) as `sectors` sectors when sectors and w are not
 * 0 (w is then sectors), with the row's angle step widened to match
 * (row[PA_OBS_ANGLE_INC], pa_obs_sector_inc); else its first w ranges
 * copied; NaN in the rest. */
void pa_obs_ranges(float *out, uint32_t w, double *row, const float *src,
                   uint32_t n, uint32_t sectors);
/* Asks for the n ranges at src ahead of their use (a block's next scan,
 * cast ticks ago on either core, fetched while this one is written). */
void pa_obs_prefetch(const float *src, uint32_t n);

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
/* n records (stride bytes apart in recs) as one push: all or none (0 or
 * PA_SHM_EFULL), one store of the head and one post. */
int pa_queue_push_many(pa_queue *q, const void *recs, size_t n, size_t stride);
/* pa_queue_push without the semaphore post while the consumer watches the
 * queue by polling (pa_now_ns() < *watch_until, a deadline it stores); it
 * stores 0 when it stops and then looks at the queue once more. */
int pa_queue_push_watched(pa_queue *q, const void *rec,
                          const int64_t *watch_until);
/* A deadline further ahead than this is taken for garbage: posted anyway. */
#define PA_QUEUE_WATCH_MAX_NS 1000000000LL
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
/* 3. The stack: one running instance (types in pa_layout.h)               */

pa_stack_def pa_stack_def_default(void);

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
  pa_visual_block *vis;
  double *lane_act; /* [ctl->def.max_robots][2]: the step lane's (v, w) */
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
/* True, with why = "/dev/shm/playarea.x.ctl: not a regular file (a FIFO)",
 * when an object of the instance is not a regular file (a FIFO, device,
 * socket, directory or symlink someone planted): such an instance is
 * FOREIGN and never opened for reading. */
bool pa_stack_refused(const char *instance, char *why, size_t why_sz);
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
/* The visual block's writer (pa-netgw) brackets each change with these. */
void pa_stack_visual_begin(pa_stack *s);
void pa_stack_visual_end(pa_stack *s);
/* Copies the visuals and points in use into out; false if the copy may be
 * torn (a writer is busy, or died mid-update: retry later). */
bool pa_stack_visual_read(const pa_stack *s, pa_visual_block *out);
/* pa-netgw's kept ports (pa_ctl.ports), copied under their seqlock into
 * out[PA_PORTS_MAX]: the count of records in use, first in out. */
size_t pa_stack_ports_read(const pa_stack *s, pa_port_rec *out);

/* Map segment: pa-sim publishes (replacing any previous map, bumping
 * ctl->map_gen); readers attach and re-attach when map_gen changes. Attach
 * returns PA_SHM_EINVAL for a map whose geometry can never be used (no
 * cells, resolution not > 0, origin not finite), other errors while there
 * is no usable segment yet. */
int pa_stack_map_publish(pa_stack *s, uint32_t width, uint32_t height,
                         double resolution, double origin_x, double origin_y,
                         double origin_yaw, const int8_t *cells,
                         int occupied_min, char *err, size_t err_sz);
/* A map prepared off pa-sim's loop (set_map's loader thread): the segment
 * is created under the staging name "map-next", filled, published and made
 * read-only by stage; commit, on the loop, renames it over "map" and bumps
 * map_gen (no copy); discard drops it. stage takes the generation commit
 * must find (map_gen + 1): commit fails, changing nothing, otherwise.
 * *cells is the staged copy, valid while seg stays attached. */
int pa_stack_map_stage(const pa_stack *s, pa_shm_seg *seg, uint32_t width,
                       uint32_t height, double resolution, double origin_x,
                       double origin_y, double origin_yaw, const int8_t *cells,
                       int occupied_min, const int8_t **staged, char *err,
                       size_t err_sz);
int pa_stack_map_commit(pa_stack *s, const pa_shm_seg *seg, char *err,
                        size_t err_sz);
void pa_stack_map_discard(const pa_stack *s, pa_shm_seg *seg);
/* The observation segment (pa-sim, on the first STEP that asks for one):
 * the existing one of this creation of the instance, else a new one with
 * room for every robot's widest scan (sparse: pages cost only as used). */
int pa_stack_obs_open(const pa_stack *s, pa_shm_seg *seg, pa_obs_seg **obs,
                      char *err, size_t err_sz);
/* The atlas segment: pa-render opens it (the existing one of this creation
 * of the instance, else a new one, sparse); pa-netgw attaches it (0, or
 * PA_SHM_ENOENT while no pa-render made it). */
int pa_stack_atlas_open(const pa_stack *s, pa_shm_seg *seg, pa_atlas_seg **a,
                        char *err, size_t err_sz);
int pa_stack_atlas_attach(const pa_stack *s, pa_shm_seg *seg, pa_atlas_seg **a,
                          char *err, size_t err_sz);
int pa_stack_map_attach(const pa_stack *s, pa_shm_seg *seg,
                        const pa_map_block **map, const int8_t **cells,
                        char *err, size_t err_sz);

/* Default instance name for a TCP port: "p<port>". */
void pa_stack_instance_for_port(char *out, size_t out_sz, unsigned port);

#ifdef __cplusplus
}
#endif
#endif /* PA_SHM_H */
