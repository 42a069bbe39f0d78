/* sim_rec.c - export_dataset: pa-sim records the next ticks of the world
 * (ground truth, odometry, velocities, every scan, and with render_image the
 * head-camera frames pa-render draws) with its map and robots into a
 * directory, as plain files any tool reads:
 *   map.yaml + map.png  the map, map_server format (pa_map_save)
 *   robots.csv          id, name, drive, radius, laser settings
 *   poses.csv           one row per robot per tick
 *   scans.csv           one row per scan: stamp, pose, geometry, ranges
 *   points.csv, points.ply  every scan's returns in the world frame
 *                       (sim_cloud.c)
 *   agents.csv          one row per agent per tick (moving obstacles)
 *   frames.csv + images/NNNNNN.png   render_image: one row per image
 *   dataset.json        what was written (last, so its presence means done)
 * and with pack_dataset <dir>.tar.gz beside it (renamed into place whole).
 * The directory is export_dir under --data_dir (OceanSim), or name under
 * --dataset_dir (the first form).
 *
 * The loop thread only copies each tick's numbers into chunks; the export
 * thread formats and writes them, follows the camera ring, encodes the PNGs
 * and packs, so a long export does not stall ticks. One export at a time;
 * its recording ends by itself after its ticks (or early, when the world is
 * replaced or pa-sim stops), and with PA_DATASET_WAIT the reply is sent by
 * the loop once the export thread is done (pa_sim_int_rec_collect). */
#define _GNU_SOURCE
#include "pa_sim.h"
#include "sim_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "pa_util.h"

#define CHUNK_BYTES (1u << 20)
#define QUEUE_MAX_BYTES (256u << 20) /* beyond: rows dropped, said so */
#define CAM_GRACE_NS 3000000000LL    /* frames of the last ticks, after */
#define POLL_NS 10000000L            /* the camera ring, while recording */
#define CAM_MAX 8                    /* cameras of one export */
#define IMAGES_MAX PA_DATASET_IMAGES_MAX
#define FILE_MAX (PATH_MAX + 128) /* the directory + a file name in it */

enum { REC_TICK = 1, REC_SCAN = 2, REC_AGENTS = 3 };

typedef struct chunk {
  struct chunk *next;
  size_t len, cap;
  uint8_t data[];
} chunk;

typedef struct tick_row { /* poses.csv, as copied on the loop */
  uint32_t robot, pad;
  double v[9]; /* x y theta odom_x odom_y odom_theta v vy w */
} tick_row;

typedef struct agent_row { /* agents.csv */
  uint32_t slot, behaviour;
  double x, y, theta;
  double vx, vy; /* [m/s] world frame, as get_state's agents */
  char name[32];
} agent_row;

typedef struct tick_head {
  uint32_t kind, n;
  uint64_t tick;
  double sim_time;
} tick_head;

typedef struct scan_head {
  uint32_t kind, pad;
  pa_scan h; /* then h.count floats */
} scan_head;

struct pa_sim_rec {
  /* fixed at the start */
  char dir[PATH_MAX + 64];     /* absolute */
  char rel[PA_CMD_PATH_MAX];   /* as the client named it */
  char archive[PATH_MAX + 80]; /* absolute; "" = not packed */
  uint32_t flags;              /* PA_DATASET_* asked */
  uint64_t first_tick, end_tick;
  pa_cmd cmd;   /* the request (the late reply's ids) */
  pa_stack *st; /* cameras: NULL without images */
  uint32_t cams[CAM_MAX], ncam;
  pa_grid grid;        /* copied: the loop may replace its own */
  pa_robot_info *info; /* copied, [ninfo] */
  uint32_t ninfo;
  /* loop thread */
  bool recording;
  uint64_t last_tick; /* the last tick with pose rows */
  chunk *cur;
  uint64_t dropped;
  /* shared, under mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  chunk *head, *tail, *spare;
  size_t queued;
  bool ended, abort;
  uint64_t final_tick; /* last_tick when the recording ended */
  int done;            /* atomic: the thread has finished */
  pthread_t th;
  /* export thread */
  FILE *poses, *scans, *frames, *agents;
  pa_sim_cloud cloud; /* points.csv, points.ply */
  uint64_t rows, scan_rows, agent_rows;
  uint32_t images, images_lost;
  uint64_t cam_tick[CAM_MAX]; /* newest frame's tick per camera */
  pa_ring_cursor cur_cam;
  uint8_t *fbuf;
  uint32_t fcap;
  bool failed, packed, stopped;
  int io_failed; /* atomic: a write failed, the loop ends the recording */
  char err[200];
  pa_sim_rec *older; /* exports still being written (loop thread's list) */
};

#define FINISHING_MAX 4 /* exports being written at once */

/* ---- the loop side: chunks
 * -------------------------------------------------*/

static void push_chunk(pa_sim_rec *rec, chunk *c) {
  pthread_mutex_lock(&rec->mu);
  c->next = NULL;
  if (rec->tail)
    rec->tail->next = c;
  else
    rec->head = c;
  rec->tail = c;
  rec->queued += c->cap;
  pthread_cond_signal(&rec->cv);
  pthread_mutex_unlock(&rec->mu);
}

/* Room for n bytes in the current chunk, or NULL (the record is dropped:
 * the export thread is far behind or memory is out). */
static uint8_t *room(pa_sim_rec *rec, size_t n) {
  if (rec->cur && rec->cur->len + n <= rec->cur->cap) {
    uint8_t *p = rec->cur->data + rec->cur->len;
    rec->cur->len += n;
    return p;
  }
  if (rec->cur) {
    push_chunk(rec, rec->cur);
    rec->cur = NULL;
  }
  chunk *c = NULL;
  pthread_mutex_lock(&rec->mu);
  bool full = rec->queued > QUEUE_MAX_BYTES;
  if (!full && rec->spare && rec->spare->cap >= n) {
    c = rec->spare;
    rec->spare = c->next;
  }
  pthread_mutex_unlock(&rec->mu);
  if (full)
    return NULL;
  if (!c) {
    size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
    c = malloc(sizeof *c + cap);
    if (!c)
      return NULL;
    c->cap = cap;
  }
  c->len = n;
  rec->cur = c;
  return c->data;
}

void pa_sim_int_rec_tick(pa_sim_state *s) {
  pa_sim_rec *rec = s->rec;
  if (!rec || !rec->recording || s->tick <= rec->last_tick ||
      s->tick > rec->end_tick)
    return;
  rec->last_tick = s->tick;
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->robot_count; i++)
    n += s->info[i].active != 0;
  uint8_t *p = room(rec, sizeof(tick_head) + (size_t)n * sizeof(tick_row));
  if (!p) {
    rec->dropped += n;
    return;
  }
  tick_head h = {REC_TICK, n, s->tick, s->sim_time};
  memcpy(p, &h, sizeof h);
  tick_row *row = (tick_row *)(p + sizeof h);
  for (uint32_t i = 0; i < s->robot_count; i++) {
    const pa_robot_state *r = &s->rs[i];
    if (!s->info[i].active)
      continue;
    *row++ = (tick_row){i,
                        0,
                        {r->x, r->y, r->theta, r->odom_x, r->odom_y,
                         r->odom_theta, r->v, r->vy, r->w}};
  }
  /* The agents of this tick: a record of their own, only when there are. */
  uint32_t na = 0;
  for (uint32_t i = 0; i < s->obstacle_count; i++)
    na += s->obs[i].active && s->obs[i].agent != PA_AGENT_NONE;
  if (!na)
    return;
  p = room(rec, sizeof(tick_head) + (size_t)na * sizeof(agent_row));
  if (!p) {
    rec->dropped += na;
    return;
  }
  h.kind = REC_AGENTS;
  h.n = na;
  memcpy(p, &h, sizeof h);
  agent_row *ar = (agent_row *)(p + sizeof h);
  for (uint32_t i = 0; i < s->obstacle_count; i++) {
    const pa_obstacle_info *o = &s->obs[i];
    if (!o->active || o->agent == PA_AGENT_NONE)
      continue;
    agent_row a = {i, o->agent, o->x, o->y, o->theta, o->vx, o->vy, {0}};
    memcpy(a.name, o->name, sizeof a.name);
    a.name[sizeof a.name - 1] = '\0';
    *ar++ = a;
  }
}

void pa_sim_int_rec_scan(pa_sim_rec *rec, const pa_scan *h,
                         const float *ranges) {
  if (!rec || !rec->recording || h->tick < rec->first_tick ||
      h->tick > rec->end_tick)
    return;
  size_t body = (size_t)h->count * sizeof(float);
  uint8_t *p = room(rec, (sizeof(scan_head) + body + 7) & ~(size_t)7);
  if (!p) {
    rec->dropped++;
    return;
  }
  scan_head sh = {REC_SCAN, 0, *h};
  memcpy(p, &sh, sizeof sh);
  memcpy(p + sizeof sh, ranges, body);
}

bool pa_sim_int_rec_due(const pa_sim_state *s) {
  /* a write error (disk full) ends it at once: the reply says so now, not
   * after the ticks asked for */
  return s->rec && s->rec->recording &&
         (s->tick >= s->rec->end_tick ||
          __atomic_load_n(&s->rec->io_failed, __ATOMIC_ACQUIRE));
}

void pa_sim_rec_stop(pa_sim_state *s) {
  pa_sim_rec *rec = s->rec;
  if (!rec || !rec->recording)
    return;
  rec->recording = false;
  if (rec->cur) {
    push_chunk(rec, rec->cur);
    rec->cur = NULL;
  }
  pthread_mutex_lock(&rec->mu);
  rec->ended = true;
  rec->final_tick = rec->last_tick;
  pthread_cond_signal(&rec->cv);
  pthread_mutex_unlock(&rec->mu);
}

/* ---- the export thread
 * -----------------------------------------------------*/

static FILE *open_in(pa_sim_rec *rec, const char *name) {
  char path[FILE_MAX];
  snprintf(path, sizeof path, "%s/%s", rec->dir, name);
  /* O_NOFOLLOW: a symlink planted in the directory is not written through */
  int fd =
      open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f && fd >= 0)
    close(fd);
  if (!f && !rec->failed) {
    rec->failed = true;
    snprintf(rec->err, sizeof rec->err, "cannot write %s: %s", name,
             strerror(errno));
  }
  return f;
}

/* Closes f; false if anything written to it was lost (disk full, I/O). */
static bool close_ok(FILE *f) {
  if (!f)
    return true;
  bool ok = !ferror(f);
  return fclose(f) == 0 && ok;
}

static void close_file(pa_sim_rec *rec, FILE **f, const char *name) {
  /* fsync: a write error the page cache hid so far shows here, not later */
  errno = 0;
  bool ok = !*f || (fflush(*f) == 0 && fsync(fileno(*f)) == 0);
  int e = errno;
  if ((!close_ok(*f) || !ok) && !rec->failed) {
    rec->failed = true;
    snprintf(rec->err, sizeof rec->err, "writing %s failed: %s", name,
             e ? strerror(e) : "a write error");
  }
  *f = NULL;
}

/* A write error of a file being written (fflush sees ENOSPC, EFBIG, EIO):
 * the export fails at once, naming the file and the error. */
static void check_files(pa_sim_rec *rec) {
  FILE *const fs[] = {rec->poses,  rec->scans,     rec->agents,
                      rec->frames, rec->cloud.csv, rec->cloud.ply};
  static const char *const names[] = {"poses.csv",  "scans.csv",  "agents.csv",
                                      "frames.csv", "points.csv", "points.ply"};
  for (size_t i = 0; i < sizeof fs / sizeof fs[0] && !rec->failed; i++) {
    errno = 0;
    if (fs[i] && (fflush(fs[i]) != 0 || ferror(fs[i]))) {
      int e = errno;
      if (!e) { /* it failed inside an fprintf: one more try tells why */
        clearerr(fs[i]);
        if (fputc('\n', fs[i]) == EOF || fflush(fs[i]) != 0)
          e = errno;
      }
      rec->failed = true;
      snprintf(rec->err, sizeof rec->err, "writing %s failed: %s", names[i],
               e ? strerror(e) : "a write error");
    }
  }
  if (rec->failed)
    __atomic_store_n(&rec->io_failed, 1, __ATOMIC_RELEASE);
}

/* A robot name as one CSV field: quoted, quotes doubled (spawn names are
 * any text). */
static void csv_name(FILE *f, const char *name) {
  fputc('"', f);
  for (const char *p = name; *p; p++) {
    if (*p == '"')
      fputc('"', f);
    fputc(*p, f);
  }
  fputc('"', f);
}

static void write_head_files(pa_sim_rec *rec) {
  char yaml[64], png[64], err[256];
  /* through temp files of pa_safefile (no symlink followed), renamed */
  pa_safe_file fy = {.fd = -1, .dirfd = -1}, fp = {.fd = -1, .dirfd = -1};
  int root = pa_safe_root_open(rec->dir, err, sizeof err);
  int rc = root < 0 ? -1
                    : pa_safe_begin(&fy, root, NULL, "map.yaml",
                                    PA_SAFE_OVERWRITE, err, sizeof err);
  if (rc == 0)
    rc = pa_safe_begin(&fp, root, NULL, "map.png", PA_SAFE_OVERWRITE, err,
                       sizeof err);
  if (root >= 0)
    close(root);
  snprintf(yaml, sizeof yaml, "/proc/self/fd/%d", fy.fd);
  snprintf(png, sizeof png, "/proc/self/fd/%d", fp.fd);
  if (rc == 0)
    rc = pa_map_save_named(&rec->grid, yaml, png, "map.png", err, sizeof err);
  if (rc == 0 && (pa_safe_commit(&fp, err, sizeof err) != 0 ||
                  pa_safe_commit(&fy, err, sizeof err) != 0))
    rc = -1;
  pa_safe_abort(&fy); /* no-ops once committed */
  pa_safe_abort(&fp);
  if (rc != 0 && !rec->failed) {
    rec->failed = true;
    snprintf(rec->err, sizeof rec->err, "map: %.180s", err);
  }
  pa_grid_free(&rec->grid);
  FILE *robots = open_in(rec, "robots.csv");
  if (robots) {
    fprintf(robots, "id,name,drive,radius,laser_beams,laser_range_min,"
                    "laser_range_max,laser_noise\n");
    for (uint32_t i = 0; i < rec->ninfo; i++) {
      const pa_robot_info *ri = &rec->info[i];
      if (!ri->active)
        continue;
      fprintf(robots, "%u,", i);
      csv_name(robots, ri->name);
      fprintf(robots, ",%s,%.9g,%u,%.9g,%.9g,%.9g\n",
              ri->drive == PA_DRIVE_OMNI ? "omni" : "diff", (double)ri->radius,
              ri->laser_beams, (double)ri->laser_range_min,
              (double)ri->laser_range_max, (double)ri->laser_noise);
    }
    close_file(rec, &robots, "robots.csv");
  }
  rec->poses = open_in(rec, "poses.csv");
  rec->scans = open_in(rec, "scans.csv");
  rec->agents = open_in(rec, "agents.csv");
  rec->cloud.csv = open_in(rec, "points.csv");
  rec->cloud.ply = open_in(rec, "points.ply");
  pa_sim_int_cloud_begin(&rec->cloud);
  if (rec->agents)
    fprintf(rec->agents, "tick,sim_time,slot,name,behaviour,x,y,theta,vx,vy\n");
  if (rec->poses)
    fprintf(rec->poses, "tick,sim_time,robot,x,y,theta,odom_x,odom_y,"
                        "odom_theta,v,vy,w\n");
  if (rec->scans)
    fprintf(rec->scans,
            "tick,sim_time,robot,seq,x,y,theta,angle_min,"
            "angle_increment,range_min,range_max,count,ranges...\n");
  if (rec->flags & PA_DATASET_IMAGES) {
    char d[FILE_MAX];
    snprintf(d, sizeof d, "%s/images", rec->dir);
    if (mkdir(d, 0755) != 0 && errno != EEXIST && !rec->failed) {
      rec->failed = true;
      snprintf(rec->err, sizeof rec->err, "cannot create images/: %s",
               strerror(errno));
    }
    rec->frames = open_in(rec, "frames.csv");
    if (rec->frames)
      fprintf(rec->frames, "file,robot,seq,tick,sim_time,x,y,theta,head,"
                           "width,height\n");
  }
}

static void write_chunk(pa_sim_rec *rec, const chunk *c) {
  for (size_t off = 0; off < c->len;) {
    uint32_t kind;
    memcpy(&kind, c->data + off, sizeof kind);
    if (kind == REC_TICK) {
      tick_head h;
      memcpy(&h, c->data + off, sizeof h);
      const uint8_t *p = c->data + off + sizeof h;
      for (uint32_t k = 0; k < h.n; k++) {
        tick_row r;
        memcpy(&r, p + k * sizeof r, sizeof r);
        if (rec->poses)
          fprintf(rec->poses,
                  "%llu,%.9g,%u,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%."
                  "9g\n",
                  (unsigned long long)h.tick, h.sim_time, r.robot, r.v[0],
                  r.v[1], r.v[2], r.v[3], r.v[4], r.v[5], r.v[6], r.v[7],
                  r.v[8]);
      }
      rec->rows += h.n;
      off += sizeof h + (size_t)h.n * sizeof(tick_row);
    } else if (kind == REC_AGENTS) {
      static const char *const beh[PA_AGENT_COUNT] = {
          "none", "constant", "waypoints", "random", "pedestrian"};
      tick_head h;
      memcpy(&h, c->data + off, sizeof h);
      const uint8_t *p = c->data + off + sizeof h;
      for (uint32_t k = 0; rec->agents && k < h.n; k++) {
        agent_row a;
        memcpy(&a, p + k * sizeof a, sizeof a);
        fprintf(rec->agents, "%llu,%.9g,%u,", (unsigned long long)h.tick,
                h.sim_time, a.slot);
        csv_name(rec->agents, a.name);
        fprintf(rec->agents, ",%s,%.9g,%.9g,%.9g,%.9g,%.9g\n",
                a.behaviour < PA_AGENT_COUNT ? beh[a.behaviour] : "?", a.x, a.y,
                a.theta, a.vx, a.vy);
      }
      rec->agent_rows += h.n;
      off += sizeof h + (size_t)h.n * sizeof(agent_row);
    } else {
      scan_head sh;
      memcpy(&sh, c->data + off, sizeof sh);
      const pa_scan *h = &sh.h;
      const uint8_t *p = c->data + off + sizeof sh;
      if (rec->scans) {
        fprintf(
            rec->scans, "%llu,%.9g,%u,%u,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%u",
            (unsigned long long)h->tick, h->sim_time, h->robot, h->seq, h->x,
            h->y, h->theta, (double)h->angle_min, (double)h->angle_increment,
            (double)h->range_min, (double)h->range_max, h->count);
        for (uint32_t i = 0; i < h->count; i++) {
          float v;
          memcpy(&v, p + i * sizeof v, sizeof v);
          fprintf(rec->scans, ",%.7g", (double)v);
        }
        fputc('\n', rec->scans);
      }
      pa_sim_int_cloud_scan(&rec->cloud, h, p);
      rec->scan_rows++;
      off += (sizeof sh + (size_t)h->count * sizeof(float) + 7) & ~(size_t)7;
    }
  }
}

static int cam_index(const pa_sim_rec *rec, uint32_t robot) {
  for (uint32_t i = 0; i < rec->ncam; i++)
    if (rec->cams[i] == robot)
      return (int)i;
  return -1;
}

/* The camera ring's new frames of the recorded robots and ticks, as PNGs
 * (last: the final tick, 0 while recording). */
static void poll_cameras(pa_sim_rec *rec, uint64_t last) {
  pa_ring *ring = rec->st->camera;
  for (;;) {
    uint32_t len;
    uint64_t seq, missed = rec->cur_cam.missed;
    int rc = pa_ring_read_next(ring, &rec->cur_cam, rec->fbuf, rec->fcap, &len,
                               &seq);
    if (rec->cur_cam.missed > missed)
      rec->images_lost += (uint32_t)(rec->cur_cam.missed - missed);
    if (rc != 0)
      break;
    const pa_frame *f = (const pa_frame *)rec->fbuf;
    if (len < sizeof *f || f->size != (uint32_t)f->width * f->height * 3 ||
        sizeof *f + f->size > len)
      continue;
    int ci = cam_index(rec, f->robot);
    if (ci < 0)
      continue;
    if (f->tick > rec->cam_tick[ci]) /* past the end too: that camera is done */
      rec->cam_tick[ci] = f->tick;
    if (f->tick < rec->first_tick || f->tick > rec->end_tick ||
        (last && f->tick > last))
      continue;
    if (rec->images >= IMAGES_MAX) {
      rec->images_lost++;
      continue;
    }
    char name[32], path[FILE_MAX], err[FILE_MAX + 64];
    snprintf(name, sizeof name, "images/%06u.png", rec->images);
    snprintf(path, sizeof path, "%s/%s", rec->dir, name);
    if (pa_sim_int_png_write(path, (const uint8_t *)(f + 1), f->width,
                             f->height, err, sizeof err) != 0) {
      if (!rec->failed) {
        rec->failed = true;
        snprintf(rec->err, sizeof rec->err, "%.190s", err);
      }
      continue;
    }
    rec->images++;
    if (rec->frames)
      fprintf(rec->frames, "%s,%u,%u,%llu,%.9g,%.9g,%.9g,%.9g,%.9g,%u,%u\n",
              name, f->robot, f->seq, (unsigned long long)f->tick, f->sim_time,
              f->x, f->y, f->theta, f->head, f->width, f->height);
  }
}

/* Every camera has a frame of the final tick or later. */
static bool cams_done(const pa_sim_rec *rec, uint64_t last) {
  for (uint32_t i = 0; i < rec->ncam; i++)
    if (rec->cam_tick[i] < last)
      return false;
  return true;
}

static void cam_release(pa_sim_rec *rec) {
  for (uint32_t i = 0; i < rec->ncam; i++) {
    uint32_t *p = &rec->st->cam[rec->cams[i]].subscribers;
    uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (v > 0 &&
           !__atomic_compare_exchange_n(p, &v, v - 1, false, __ATOMIC_RELEASE,
                                        __ATOMIC_ACQUIRE))
      ;
  }
  if (rec->ncam)
    sem_post(&rec->st->ctl->render_wake);
  rec->ncam = 0;
}

/* The files written, relative to the directory, in the order packed: n. */
static size_t file_list(const pa_sim_rec *rec, char ***out) {
  static const char *const fixed[] = {PA_DATASET_FIXED_FILES};
  size_t nf = sizeof fixed / sizeof fixed[0];
  bool img = rec->flags & PA_DATASET_IMAGES;
  size_t n = nf + (img ? 1 + rec->images : 0) + 1;
  char **v = calloc(n, sizeof *v);
  if (!v)
    return 0;
  size_t k = 0;
  for (size_t i = 0; i < nf; i++)
    v[k++] = strdup(fixed[i]);
  if (img) {
    v[k++] = strdup("frames.csv");
    for (uint32_t i = 0; i < rec->images; i++)
      if (asprintf(&v[k++], "images/%06u.png", i) < 0)
        v[k - 1] = NULL;
  }
  v[k++] = strdup("dataset.json");
  for (size_t i = 0; i < k; i++)
    if (!v[i]) {
      for (size_t j = 0; j < k; j++)
        free(v[j]);
      free(v);
      return 0;
    }
  *out = v;
  return k;
}

static void free_list(char **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static void write_manifest(pa_sim_rec *rec, char **files, size_t n,
                           const char *archive_rel, bool aborted) {
  json_t *o = json_object();
  json_object_set_new(o, "format", json_string("playarea-dataset"));
  json_object_set_new(o, "version", json_integer(1));
  json_object_set_new(o, "status",
                      json_string(rec->failed ? "incomplete"
                                  : aborted   ? "stopped"
                                              : "complete"));
  json_object_set_new(o, "export_dir", json_string(rec->rel));
  json_object_set_new(o, "first_tick",
                      json_integer((json_int_t)rec->first_tick));
  json_object_set_new(o, "last_tick",
                      json_integer((json_int_t)rec->final_tick));
  json_object_set_new(o, "rows", json_integer((json_int_t)rec->rows));
  json_object_set_new(o, "scans", json_integer((json_int_t)rec->scan_rows));
  json_object_set_new(o, "points", json_integer((json_int_t)rec->cloud.points));
  json_object_set_new(o, "agent_rows",
                      json_integer((json_int_t)rec->agent_rows));
  json_object_set_new(o, "rows_dropped",
                      json_integer((json_int_t)rec->dropped));
  json_object_set_new(o, "images", json_integer(rec->images));
  json_object_set_new(o, "images_lost", json_integer(rec->images_lost));
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_string(files[i]));
  json_object_set_new(o, "files", a);
  if (archive_rel)
    json_object_set_new(o, "archive", json_string(archive_rel));
  if (rec->failed)
    json_object_set_new(o, "error", json_string(rec->err));
  /* dataset.json says "complete": it is written only then, whole (temp,
   * fsync, rename); anything else is dataset.incomplete.json */
  bool complete = !rec->failed && !aborted;
  char err[PA_SAFE_REL_MAX + 128];
  pa_safe_file f = {.fd = -1, .dirfd = -1};
  int root = pa_safe_root_open(rec->dir, err, sizeof err);
  int rc = root < 0 ? PA_SAFE_IO
                    : pa_safe_begin(&f, root, NULL,
                                    complete ? "dataset.json"
                                             : "dataset.incomplete.json",
                                    PA_SAFE_OVERWRITE, err, sizeof err);
  if (root >= 0)
    close(root);
  errno = 0;
  if (rc == PA_SAFE_OK && json_dumpfd(o, f.fd, JSON_INDENT(1)) != 0) {
    rc = pa_safe_io_error(&f, errno ? errno : EIO, err, sizeof err);
    pa_safe_abort(&f);
  } else if (rc == PA_SAFE_OK) {
    rc = pa_safe_commit(&f, err, sizeof err);
  }
  if (rc != PA_SAFE_OK && !rec->failed) {
    rec->failed = true;
    snprintf(rec->err, sizeof rec->err, "%.190s", err);
  }
  json_decref(o);
}

static void *export_main(void *arg) {
  pa_sim_rec *rec = arg;
  write_head_files(rec);
  bool img = rec->ncam > 0;
  int64_t grace_end = 0;
  for (;;) {
    pthread_mutex_lock(&rec->mu);
    if (!rec->head && !rec->ended) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += POLL_NS;
      if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&rec->cv, &rec->mu, &ts);
    }
    chunk *list = rec->head;
    rec->head = rec->tail = NULL;
    bool ended = rec->ended, abort = rec->abort;
    uint64_t last = rec->final_tick;
    pthread_mutex_unlock(&rec->mu);
    while (list) {
      chunk *c = list;
      list = c->next;
      write_chunk(rec, c);
      pthread_mutex_lock(&rec->mu);
      rec->queued -= c->cap;
      c->next = rec->spare; /* reused by the loop */
      rec->spare = c;
      pthread_mutex_unlock(&rec->mu);
    }
    if (img)
      poll_cameras(rec, ended ? last : 0);
    check_files(rec);
    if (rec->failed && !ended) { /* the loop ends the recording */
      struct timespec ts = {0, POLL_NS};
      nanosleep(&ts, NULL);
      continue;
    }
    if (!ended)
      continue;
    pthread_mutex_lock(&rec->mu);
    bool more = rec->head != NULL;
    pthread_mutex_unlock(&rec->mu);
    if (more)
      continue;
    if (img && !abort && !cams_done(rec, last)) {
      /* frames rendered from the last ticks are still on their way */
      int64_t now = pa_now_ns();
      if (!grace_end)
        grace_end = now + CAM_GRACE_NS;
      if (now < grace_end) {
        struct timespec ts = {0, POLL_NS};
        nanosleep(&ts, NULL);
        continue;
      }
    }
    break;
  }
  pthread_mutex_lock(&rec->mu);
  bool aborted = rec->abort;
  pthread_mutex_unlock(&rec->mu);
  rec->stopped = aborted;
  if (img)
    cam_release(rec);
  if (rec->dropped && !rec->failed) { /* the loop's last word came before */
    rec->failed = true;
    snprintf(rec->err, sizeof rec->err,
             "%llu rows dropped: the export thread fell behind",
             (unsigned long long)rec->dropped);
  }
  close_file(rec, &rec->poses, "poses.csv");
  close_file(rec, &rec->scans, "scans.csv");
  close_file(rec, &rec->agents, "agents.csv");
  close_file(rec, &rec->frames, "frames.csv");
  if (pa_sim_int_cloud_end(&rec->cloud) != 0 && !rec->failed) {
    rec->failed = true;
    snprintf(rec->err, sizeof rec->err, "writing points.ply failed: %s",
             strerror(errno));
  }
  close_file(rec, &rec->cloud.csv, "points.csv");
  close_file(rec, &rec->cloud.ply, "points.ply");
  char **files = NULL;
  size_t n = file_list(rec, &files);
  bool pack = (rec->flags & PA_DATASET_PACK) && !aborted;
  char arel[PA_CMD_PATH_MAX + 16];
  snprintf(arel, sizeof arel, "%s.tar.gz", rec->rel);
  if (!n && !rec->failed) {
    rec->failed = true;
    snprintf(rec->err, sizeof rec->err, "out of memory");
  }
  write_manifest(rec, files, n, pack ? arel : NULL, aborted);
  if (pack && n && !rec->failed) {
    char err[PATH_MAX + 64];
    if (pa_sim_int_targz(rec->archive, rec->dir, base_name(rec->dir),
                         (const char *const *)files, n, err, sizeof err) == 0)
      rec->packed = true;
    else {
      rec->failed = true;
      snprintf(rec->err, sizeof rec->err, "%.190s", err);
    }
  }
  if (n)
    free_list(files, n);
  if (!rec->failed && !aborted) { /* finished: no longer a retry's to reuse */
    char mk[FILE_MAX];
    snprintf(mk, sizeof mk, "%s/" PA_SIM_EXPORT_MARKER, rec->dir);
    unlink(mk);
  }
  if (rec->failed)
    pa_error("export_dataset: %s is incomplete: %s", rec->dir, rec->err);
  else
    pa_info("export_dataset: %s written (ticks %llu..%llu, %llu pose rows, "
            "%llu scans, %u images%s)",
            rec->dir, (unsigned long long)rec->first_tick,
            (unsigned long long)rec->final_tick, (unsigned long long)rec->rows,
            (unsigned long long)rec->scan_rows, rec->images,
            rec->packed ? ", packed" : "");
  __atomic_store_n(&rec->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* ---- start, collect
 * --------------------------------------------------------*/

static void rec_free(pa_sim_rec *rec) {
  for (chunk *c = rec->spare, *n; c; c = n)
    n = c->next, free(c);
  for (chunk *c = rec->head, *n; c; c = n)
    n = c->next, free(c);
  free(rec->cur);
  pa_grid_free(&rec->grid);
  free(rec->info);
  free(rec->fbuf);
  pthread_mutex_destroy(&rec->mu);
  pthread_cond_destroy(&rec->cv);
  free(rec);
}

/* Is pa-render attached and alive? */
static bool render_running(const pa_stack *st) {
  const pa_health *h = &st->ctl->health[PA_PROC_RENDER];
  int32_t pid = __atomic_load_n(&h->pid, __ATOMIC_ACQUIRE);
  return pid > 0 && __atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) &&
         (kill(pid, 0) == 0 || errno == EPERM);
}

/* The export directory (canonical, created) for c: 0, or -1 with r set.
 * Nothing is created when refused. */
static int export_dir(const pa_sim_model *m, const pa_cmd *c, pa_sim_rec *rec,
                      const pa_sim_rec *running, uint64_t first_tick,
                      pa_reply *r) {
  char rel[PA_CMD_PATH_MAX];
  memcpy(rel, c->path, sizeof rel);
  rel[sizeof rel - 1] = 0;
  if (!rel[0] && !c->name[0]) /* OceanSim's export_dir is optional */
    snprintf(rel, sizeof rel, "dataset_%llu", (unsigned long long)first_tick);
  if (!rel[0]) { /* the first form: name under --dataset_dir */
    if (!m->def.dataset_dir[0]) {
      pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                      "export_dataset with a name is off: start with "
                      "--dataset_dir, or give export_dir (under --data_dir)");
      return -1;
    }
    if (!pa_snapshot_name_ok(c->name)) {
      pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                      "dataset name: 1 to %d of A-Z a-z 0-9 _ -",
                      PA_SNAPSHOT_NAME_MAX);
      return -1;
    }
    char base[PATH_MAX], err[PATH_MAX + 64];
    if (pa_sim_int_data_dir(m->def.dataset_dir, base, err, sizeof err) != 0) {
      pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "--dataset_dir: %.80s", err);
      return -1;
    }
    snprintf(rec->rel, sizeof rec->rel, "%s", c->name);
    if (snprintf(rec->dir, sizeof rec->dir, "%s/%s", base, c->name) >=
        (int)sizeof rec->dir) {
      pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "--dataset_dir is too long");
      return -1;
    }
  } else {
    size_t n = strlen(rel);
    while (n > 1 && rel[n - 1] == '/')
      rel[--n] = 0;
    const char *b = base_name(rel);
    if (!*b || !strcmp(b, ".") || !strcmp(b, "..") || strlen(b) > 80) {
      pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                      "export_dir '%.60s' must end in a directory name of 1 "
                      "to 80 bytes",
                      rel);
      return -1;
    }
    char dd[PATH_MAX], err[PATH_MAX + 64];
    if (pa_sim_int_data_dir(m->def.data_dir, dd, err, sizeof err) != 0) {
      pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%.90s", err);
      return -1;
    }
    const char *busy[FINISHING_MAX + 1];
    size_t nb = 0;
    for (const pa_sim_rec *o = running; o && nb < FINISHING_MAX + 1;
         o = o->older)
      busy[nb++] = o->dir;
    if (pa_sim_int_export_claim(dd, rel, c, busy, nb, rec->dir, sizeof rec->dir,
                                r) != 0)
      return -1;
    snprintf(rec->rel, sizeof rec->rel, "%s", rel);
    if (c->dataset.flags & PA_DATASET_PACK)
      snprintf(rec->archive, sizeof rec->archive, "%s.tar.gz", rec->dir);
    return 0;
  }
  struct stat sb;
  if (c->dataset.flags & PA_DATASET_PACK) {
    snprintf(rec->archive, sizeof rec->archive, "%s.tar.gz", rec->dir);
    if (lstat(rec->archive, &sb) == 0) {
      pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                      "%.40s.tar.gz exists already: give a new name", c->name);
      return -1;
    }
  }
  if (mkdir(rec->dir, 0755) != 0) {
    pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "%.40s: %s", c->name,
                    errno == EEXIST ? "exists already" : strerror(errno));
    return -1;
  }
  return 0;
}

pa_status pa_sim_int_rec_start(const pa_sim_model *m, pa_sim_state *s,
                               const pa_cmd *c, pa_reply *r) {
  if (s->rec && s->rec->recording)
    return pa_sim_int_fail(r, PA_ERR_BUSY, "recording until tick %llu already",
                           (unsigned long long)s->rec->end_tick);
  unsigned finishing = 0; /* earlier ones may still be written meanwhile */
  for (const pa_sim_rec *o = s->rec; o; o = o->older)
    finishing++;
  if (finishing >= FINISHING_MAX)
    return pa_sim_int_fail(r, PA_ERR_BUSY,
                           "%u exports are still being written (the last "
                           "into %.40s)",
                           finishing, s->rec->rel);
  if (c->dataset.ticks < 1 || c->dataset.ticks > 100000000)
    return pa_sim_int_fail(r, PA_ERR_INVALID_ACTION_SHAPE,
                           "ticks must be in [1, 100000000]");
  uint32_t flags = c->dataset.flags;
  if (flags &
      ~(uint32_t)(PA_DATASET_IMAGES | PA_DATASET_PACK | PA_DATASET_WAIT))
    return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                           "unknown export_dataset flags 0x%x", flags);
  uint32_t cams[CAM_MAX], ncam = 0;
  if (flags & PA_DATASET_IMAGES) {
    if (!s->stack || !render_running(s->stack))
      return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                             "render_image: pa-render is not running (start "
                             "the stack without --no_render)");
    for (uint32_t i = 0; i < s->robot_count; i++) {
      if (!s->info[i].active || (c->robot != UINT32_MAX && c->robot != i))
        continue;
      if (ncam == CAM_MAX)
        return pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE,
                               "render_image: more than %d robots; name one "
                               "with data.robot",
                               CAM_MAX);
      cams[ncam++] = i;
    }
    if (!ncam)
      return pa_sim_int_fail(r, PA_ERR_UNKNOWN_ROBOT,
                             c->robot == UINT32_MAX
                                 ? "render_image: no robot has a camera"
                                 : "render_image: no robot %u",
                             c->robot);
  }
  pa_sim_rec *rec = calloc(1, sizeof *rec);
  if (!rec)
    return pa_sim_int_fail(r, PA_ERR_BUSY, "out of memory");
  pthread_mutex_init(&rec->mu, NULL);
  pthread_cond_init(&rec->cv, NULL);
  rec->flags = flags;
  rec->cmd = *c;
  if (export_dir(m, c, rec, s->rec, s->tick + 1, r) != 0) {
    rec_free(rec);
    return (pa_status)r->status;
  }
  /* what the export thread writes without the loop's data */
  rec->grid = m->grid;
  rec->grid.cells = malloc((size_t)m->grid.width * m->grid.height);
  rec->ninfo = s->robot_count;
  rec->info = malloc((rec->ninfo ? rec->ninfo : 1) * sizeof *rec->info);
  if (ncam) {
    rec->st = s->stack;
    rec->fcap = pa_ring_max_record(s->stack->camera);
    rec->fbuf = malloc(rec->fcap);
  }
  if (!rec->grid.cells || !rec->info || (ncam && !rec->fbuf)) {
    rmdir(rec->dir);
    rec_free(rec);
    return pa_sim_int_fail(r, PA_ERR_BUSY, "out of memory");
  }
  memcpy(rec->grid.cells, m->grid.cells,
         (size_t)m->grid.width * m->grid.height);
  memcpy(rec->info, s->info, rec->ninfo * sizeof *rec->info);
  if (ncam) {
    /* the render demand held for the export; frames from now on */
    rec->cur_cam = pa_ring_cursor_now(s->stack->camera);
    memcpy(rec->cams, cams, sizeof cams);
    rec->ncam = ncam;
    for (uint32_t i = 0; i < ncam; i++)
      __atomic_fetch_add(&s->stack->cam[cams[i]].subscribers, 1,
                         __ATOMIC_ACQ_REL);
    sem_post(&s->stack->ctl->render_wake);
  }
  rec->first_tick = s->tick + 1;
  rec->end_tick = s->tick + c->dataset.ticks;
  rec->last_tick = s->tick;
  rec->recording = true;
  int e = pthread_create(&rec->th, NULL, export_main, rec);
  if (e != 0) {
    if (rec->ncam)
      cam_release(rec);
    rmdir(rec->dir);
    rec_free(rec);
    return pa_sim_int_fail(r, PA_ERR_BUSY, "cannot start the export: %s",
                           strerror(e));
  }
  rec->older = s->rec;
  s->rec = rec;
  pa_info("export_dataset: recording ticks %llu..%llu into %s%s",
          (unsigned long long)rec->first_tick,
          (unsigned long long)rec->end_tick, rec->dir,
          ncam ? " with camera images" : "");
  r->dataset.first_tick = rec->first_tick;
  r->dataset.last_tick = rec->end_tick;
  return PA_OK;
}

bool pa_sim_int_rec_collect(pa_sim_state *s, pa_reply *r) {
  for (pa_sim_rec **p = &s->rec; *p;) {
    pa_sim_rec *rec = *p;
    if (rec->recording || !__atomic_load_n(&rec->done, __ATOMIC_ACQUIRE)) {
      p = &rec->older;
      continue;
    }
    pthread_join(rec->th, NULL);
    *p = rec->older;
    bool reply =
        (rec->flags & PA_DATASET_WAIT) && !(rec->cmd.flags & PA_CMDF_NO_REPLY);
    if (reply) {
      memset(r, 0, sizeof *r);
      r->client_id = rec->cmd.client_id;
      r->request_id = rec->cmd.request_id;
      r->op = rec->cmd.op;
      r->tick = s->tick;
      r->sim_time = s->sim_time;
      r->dataset.first_tick = rec->first_tick;
      r->dataset.last_tick = rec->final_tick;
      r->dataset.rows = rec->rows;
      r->dataset.scans = (uint32_t)rec->scan_rows;
      r->dataset.images = rec->images;
      r->dataset.images_lost = rec->images_lost;
      r->dataset.flags = (rec->flags & PA_DATASET_IMAGES) |
                         (rec->packed ? PA_DATASET_PACK : 0);
      if (rec->failed)
        pa_sim_int_fail(r, PA_ERR_INVALID_MESSAGE, "export incomplete: %.70s",
                        rec->err);
      else if (rec->stopped)
        pa_sim_int_fail(r, PA_ERR_BUSY,
                        "pa-sim stopped during the export: written up to "
                        "tick %llu, not packed",
                        (unsigned long long)rec->final_tick);
      else
        r->status = PA_OK;
    }
    rec_free(rec);
    if (reply)
      return true; /* one reply per call: the caller has room for one */
  }
  return false;
}

void pa_sim_rec_close(pa_sim_state *s) {
  pa_sim_rec_stop(s);
  for (pa_sim_rec *rec = s->rec; rec; rec = rec->older) {
    pthread_mutex_lock(&rec->mu);
    rec->abort = true; /* no waiting for frames, no packing */
    pthread_cond_signal(&rec->cv);
    pthread_mutex_unlock(&rec->mu);
  }
  for (pa_sim_rec *rec = s->rec; rec; rec = rec->older)
    while (!__atomic_load_n(&rec->done, __ATOMIC_ACQUIRE)) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
}
