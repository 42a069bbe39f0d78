/* json_visual_mesh.c - a mesh visual's file (OBJ, STL or PLY, by its
 * extension) read under --data_dir (no '..', no symlink, a regular file of
 * bounded size) and decoded by Debian's libassimp in a child process, so a
 * malformed file can crash or hang only the child; only that child loads
 * libassimp (dlopen), so pa-netgw itself never maps it and the C++ runtime
 * and codecs it pulls in (~5 MB resident, issue 37); the triangles come back
 * through a pipe as the visual's points (3 a triangle, local coordinates,
 * the file's vertex colours when it has some). */
#define _GNU_SOURCE
#include "json_int.h"

#include "pa_safefile.h"

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MESH_FILE_MAX (32u << 20) /* [bytes] */
#define MESH_CHILD_S 10           /* [s] of CPU and of wall for the decoder */

/* The file's bytes (malloc'd) or -1 with err naming rel. */
static int read_beneath(const pa_netgw *g, const char *rel, uint8_t **buf,
                        size_t *len, char *err, size_t err_sz) {
  const char *dflag =
      g->def.data_dir && *g->def.data_dir ? g->def.data_dir : ".";
  char dd[PATH_MAX];
  if (!realpath(dflag, dd)) {
    snprintf(err, err_sz, "--data_dir %s: %s", dflag, strerror(errno));
    return -1;
  }
  int root = pa_safe_root_open(dd, err, err_sz);
  if (root < 0)
    return -1;
  int dfd = -1;
  char base[PA_SAFE_NAME_MAX];
  int rc = pa_safe_parent(root, dd, rel, 0, &dfd, base, err, err_sz);
  close(root);
  if (rc != PA_SAFE_OK)
    return -1;
  int fd = openat(dfd, base,
                  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  int e = errno;
  close(dfd);
  if (fd < 0) {
    snprintf(err, err_sz, "data.file %s: %s", rel,
             e == ELOOP ? "a symlink (not followed)" : strerror(e));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, err_sz, "data.file %s: not a regular file", rel);
    close(fd);
    return -1;
  }
  if (st.st_size > MESH_FILE_MAX || st.st_size == 0) {
    snprintf(err, err_sz, "data.file %s: %lld bytes, must be 1..%u", rel,
             (long long)st.st_size, MESH_FILE_MAX);
    close(fd);
    return -1;
  }
  size_t cap = (size_t)st.st_size, got = 0;
  uint8_t *b = malloc(cap);
  while (b && got < cap) {
    ssize_t r = read(fd, b + got, cap - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  if (!b || got != cap) {
    snprintf(err, err_sz, "data.file %s: %s", rel,
             b ? "cannot be read whole" : "out of memory");
    free(b);
    return -1;
  }
  *buf = b;
  *len = cap;
  return 0;
}

/* What the child sends before the points. */
enum { MESH_NO_DECODER = -1, MESH_BAD = 0, MESH_OK = 1 };
typedef struct mesh_head {
  int32_t ok; /* MESH_* */
  uint32_t tris;
  char err[200];
} mesh_head;

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    c += w, n -= (size_t)w;
  }
  return 0;
}

static uint32_t colour_of(const struct aiColor4D *c) {
  float f[4] = {c->r, c->g, c->b, c->a};
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    float x = isfinite(f[i]) ? fminf(fmaxf(f[i], 0), 1) : 1;
    v = v << 8 | (uint32_t)lroundf(x * 255);
  }
  return v ? v : 1;
}

/* libassimp's two entry points the decoder calls (types from its header). */
typedef struct assimp_api {
  __typeof__(aiImportFileFromMemory) *import_mem;
  __typeof__(aiGetErrorString) *error_string;
} assimp_api;

/* Loads libassimp by its SONAME (the dynamic linker's path, then the
 * directory it was built against): 0, or -1 with err naming the library. */
static int assimp_load(assimp_api *api, char *err, size_t err_sz) {
  void *lib = dlopen(PA_ASSIMP_SONAME, RTLD_NOW | RTLD_LOCAL);
  char first[160];
  snprintf(first, sizeof first, "%s", lib ? "" : dlerror());
  if (!lib && *PA_ASSIMP_LIBDIR)
    lib = dlopen(PA_ASSIMP_LIBDIR "/" PA_ASSIMP_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(err, err_sz, "%s (Debian package " PA_ASSIMP_PACKAGE ")", first);
    return -1;
  }
  void *im = dlsym(lib, "aiImportFileFromMemory");
  void *es = dlsym(lib, "aiGetErrorString");
  if (!im || !es) {
    snprintf(err, err_sz, "%s lacks aiImportFileFromMemory/aiGetErrorString",
             PA_ASSIMP_SONAME);
    return -1;
  }
  memcpy(&api->import_mem, &im, sizeof im); /* POSIX: data to function */
  memcpy(&api->error_string, &es, sizeof es);
  return 0;
}

/* The child: decode, send, exit (never returns). */
static void child_decode(int wfd, const uint8_t *buf, size_t len,
                         const char *hint) {
  alarm(MESH_CHILD_S);
  struct rlimit cpu = {MESH_CHILD_S, MESH_CHILD_S};
  setrlimit(RLIMIT_CPU, &cpu);
  mesh_head h;
  memset(&h, 0, sizeof h);
  assimp_api ai;
  if (assimp_load(&ai, h.err, sizeof h.err) < 0) {
    h.ok = MESH_NO_DECODER;
    write_all(wfd, &h, sizeof h);
    _exit(0);
  }
  const struct aiScene *sc =
      ai.import_mem((const char *)buf, (unsigned)len,
                    aiProcess_Triangulate | aiProcess_PreTransformVertices |
                        aiProcess_SortByPType,
                    hint);
  if (!sc) {
    snprintf(h.err, sizeof h.err, "%s", ai.error_string());
    write_all(wfd, &h, sizeof h);
    _exit(0);
  }
  uint64_t tris = 0;
  for (unsigned m = 0; m < sc->mNumMeshes; m++)
    for (unsigned f = 0; f < sc->mMeshes[m]->mNumFaces; f++)
      tris += sc->mMeshes[m]->mFaces[f].mNumIndices == 3;
  if (tris == 0 || tris > PA_VIS_MESH_TRIS_MAX) {
    snprintf(h.err, sizeof h.err, "%llu triangles, must be 1..%d",
             (unsigned long long)tris, PA_VIS_MESH_TRIS_MAX);
    write_all(wfd, &h, sizeof h);
    _exit(0);
  }
  h.ok = MESH_OK;
  h.tris = (uint32_t)tris;
  if (write_all(wfd, &h, sizeof h) < 0)
    _exit(1);
  for (unsigned m = 0; m < sc->mNumMeshes; m++) {
    const struct aiMesh *me = sc->mMeshes[m];
    for (unsigned f = 0; f < me->mNumFaces; f++) {
      const struct aiFace *fa = &me->mFaces[f];
      if (fa->mNumIndices != 3)
        continue;
      pa_vis_point p[3];
      for (int k = 0; k < 3; k++) {
        unsigned i = fa->mIndices[k];
        const struct aiVector3D *q = &me->mVertices[i];
        p[k].p[0] = q->x, p[k].p[1] = q->y, p[k].p[2] = q->z;
        p[k].rgba = me->mColors[0] ? colour_of(&me->mColors[0][i]) : 0;
      }
      if (write_all(wfd, p, sizeof p) < 0)
        _exit(1);
    }
  }
  _exit(0);
}

/* What the child sent (data, got bytes) and how it ended: 0 with the
 * triangles' points, or -1 with err. */
static int parse_decoded(const uint8_t *data, size_t got, int status,
                         const char *hint, const char *rel, pa_vis_point **pts,
                         uint32_t *n, char *err, size_t err_sz) {
  mesh_head h;
  memset(&h, 0, sizeof h);
  bool head = got >= sizeof h;
  if (head)
    memcpy(&h, data, sizeof h);
  h.err[sizeof h.err - 1] = 0;
  size_t need =
      head && h.ok == MESH_OK && h.tris && h.tris <= PA_VIS_MESH_TRIS_MAX
          ? sizeof h + (size_t)h.tris * 3 * sizeof(pa_vis_point)
          : 0;
  if (head && h.ok == MESH_NO_DECODER) {
    snprintf(err, err_sz, "data.file %.200s: %s meshes need libassimp: %s", rel,
             hint, h.err);
    return -1;
  }
  if (head && h.ok != MESH_OK) {
    snprintf(err, err_sz, "data.file %.200s: not a readable %s mesh: %s", rel,
             hint, h.err);
    return -1;
  }
  pa_vis_point *p = need && got == need ? malloc(need - sizeof h) : NULL;
  if (!p) {
    snprintf(err, err_sz, "data.file %.200s: the %s decoder failed (%s %d)",
             rel, hint, WIFSIGNALED(status) ? "signal" : "exit status",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return -1;
  }
  memcpy(p, data + sizeof h, need - sizeof h);
  for (uint32_t i = 0; i < h.tris * 3; i++)
    for (int k = 0; k < 3; k++)
      if (!isfinite(p[i].p[k]) || fabsf(p[i].p[k]) > VIS_COORD_MAX) {
        snprintf(err, err_sz,
                 "data.file %.200s: vertex %u is not finite or beyond 1e6 m",
                 rel, i);
        free(p);
        return -1;
      }
  *pts = p;
  *n = h.tris * 3;
  return 0;
}

/* The most the child may send: the head and the largest mesh's points. */
#define MESH_PIPE_MAX                                                          \
  (sizeof(mesh_head) + (size_t)PA_VIS_MESH_TRIS_MAX * 3 * sizeof(pa_vis_point))

/* A decode in flight for a client (one request at a time: its one). */
typedef struct pa_mesh_job {
  pa_client *c;
  uint64_t req;
  pid_t pid;
  int fd;
  struct event *ev;
  uint8_t *buf;
  size_t got, cap;
  char rel[PA_SAFE_REL_MAX + 1], hint[8];
  bool done; /* the result below is in */
  int rc;
  pa_vis_point *pts;
  uint32_t n;
  char err[512];
} pa_mesh_job;

/* Reaps the child (killed unless it has ended) and frees the job. */
static void job_free(pa_mesh_job *j) {
  if (j->ev)
    event_free(j->ev);
  if (j->fd >= 0)
    close(j->fd);
  if (j->pid > 0) {
    if (!j->done)
      kill(j->pid, SIGKILL);
    while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
      ;
  }
  if (j->c && j->c->mesh_job == j)
    j->c->mesh_job = NULL;
  if (j->c && j->c->g->mesh_delivering == j)
    j->c->g->mesh_delivering = NULL;
  free(j->buf);
  free(j->pts);
  free(j);
}

void pa_json_vis_mesh_cancel(pa_client *c) {
  if (c->mesh_job)
    job_free(c->mesh_job);
}

/* Reads what is there; 1 at the end (EOF, or too much), 0 for more. */
static int job_read(pa_mesh_job *j) {
  for (;;) {
    if (j->got == j->cap) {
      size_t cap = j->cap ? j->cap * 2 : 64 << 10;
      if (cap > MESH_PIPE_MAX + 1)
        cap = MESH_PIPE_MAX + 1;
      uint8_t *b = cap > j->cap ? realloc(j->buf, cap) : NULL;
      if (!b)
        return 1; /* more than a mesh may be, or no memory: it failed */
      j->buf = b, j->cap = cap;
    }
    ssize_t r = read(j->fd, j->buf + j->got, j->cap - j->got);
    if (r > 0)
      j->got += (size_t)r;
    else if (r == 0)
      return 1;
    else if (errno == EINTR)
      continue;
    else
      return errno == EAGAIN ? 0 : 1;
  }
}

/* The child's pipe is readable: at its end, the result, and the request
 * that waits for it is answered again with it (its done handler). */
static void on_job_readable(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  pa_mesh_job *j = arg;
  if (!job_read(j))
    return;
  event_del(j->ev);
  close(j->fd);
  j->fd = -1;
  int status = 0;
  while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR)
    ;
  j->pid = 0;
  j->rc = j->got > MESH_PIPE_MAX
              ? (snprintf(j->err, sizeof j->err,
                          "data.file %.200s: the %s decoder sent too much",
                          j->rel, j->hint),
                 -1)
              : parse_decoded(j->buf, j->got, status, j->hint, j->rel, &j->pts,
                              &j->n, j->err, sizeof j->err);
  free(j->buf);
  j->buf = NULL;
  j->done = true;
  pa_client *c = j->c;
  pa_netgw *g = c->g;
  pa_reply r;
  memset(&r, 0, sizeof r);
  r.client_id = c->id;
  r.request_id = j->req;
  r.status = PA_OK;
  const pa_tick *t = pa_gw_latest(g);
  r.sim_time = t ? t->sim_time : 0;
  /* The done handler takes the result (and frees the job); the client may
   * be gone after the reply (its release frees the job too). Still here:
   * nobody waited for it (the request timed out). */
  g->mesh_delivering = j;
  pa_gw_local_reply(g, &r);
  if (g->mesh_delivering)
    job_free(g->mesh_delivering);
}

/* Forks the decoder of buf; the job (c->mesh_job) or -1 with err. */
static pa_mesh_job *job_start(pa_client *c, const uint8_t *buf, size_t len,
                              const char *hint, const char *rel, char *err,
                              size_t err_sz) {
  pa_mesh_job *j = calloc(1, sizeof *j);
  int pfd[2] = {-1, -1};
  if (!j || pipe2(pfd, O_CLOEXEC) != 0) {
    snprintf(err, err_sz, "data.file %s: pipe: %s", rel, strerror(errno));
    free(j);
    return NULL;
  }
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, err_sz, "data.file %s: fork: %s", rel, strerror(errno));
    close(pfd[0]), close(pfd[1]);
    free(j);
    return NULL;
  }
  if (pid == 0) {
    close(pfd[0]);
    signal(SIGPIPE, SIG_IGN);
    child_decode(pfd[1], buf, len, hint);
  }
  close(pfd[1]);
  j->c = c;
  j->pid = pid;
  j->fd = pfd[0];
  snprintf(j->rel, sizeof j->rel, "%s", rel);
  snprintf(j->hint, sizeof j->hint, "%s", hint);
  return j;
}

/* How long a request waits for its mesh's decoder [ms]: more than the
 * child's own limit of MESH_CHILD_S. */
#define MESH_WAIT_MS ((MESH_CHILD_S + 5) * 1000)

int pa_json_vis_mesh_file(jctx *x, const char *rel, pa_vis_point **pts,
                          uint32_t *n) {
  const char *dot = strrchr(rel, '.');
  char hint[8] = "";
  for (size_t i = 0; dot && dot[i + 1] && i + 1 < sizeof hint; i++)
    hint[i] = (char)(dot[i + 1] | 0x20); /* lower case */
  if (strcmp(hint, "obj") && strcmp(hint, "stl") && strcmp(hint, "ply")) {
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                 "data.file %s: a mesh is an .obj, .stl or .ply file", rel);
    return -1;
  }
  pa_client *c = x->c;
  pa_mesh_job *j = c->mesh_job;
  if (j && j->done && c->g->mesh_delivering == j) {
    /* the request again, its decode done: the result */
    int rc = j->rc;
    if (rc == 0) {
      *pts = j->pts, *n = j->n;
      j->pts = NULL;
    } else
      pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "%s", j->err);
    job_free(j);
    return rc;
  }
  if (j) /* an earlier request's, timed out: nobody waits for it */
    job_free(j);
  if (!x->act->done) { /* its row must say so: the reply waits */
    pa_json_fail(x, PA_ERR_BUSY, "internal: %s may not wait for a decoder",
                 x->act->name);
    return -1;
  }
  uint8_t *buf = NULL;
  size_t len = 0;
  char err[256];
  if (read_beneath(c->g, rel, &buf, &len, err, sizeof err) < 0 ||
      !(j = job_start(c, buf, len, hint, rel, err, sizeof err))) {
    free(buf);
    pa_json_fail(x, PA_ERR_INVALID_MESSAGE, "%s", err);
    return -1;
  }
  free(buf);
  /* Off the loop: other clients are served while the child decodes; the
   * request is answered when its pipe ends (on_job_readable). */
  int fl = fcntl(j->fd, F_GETFL);
  fcntl(j->fd, F_SETFL, (fl < 0 ? 0 : fl) | O_NONBLOCK);
  j->ev =
      event_new(c->g->base, j->fd, EV_READ | EV_PERSIST, on_job_readable, j);
  if (!j->ev || event_add(j->ev, NULL) != 0) {
    job_free(j);
    pa_json_fail(x, PA_ERR_BUSY, "data.file %s: out of memory", rel);
    return -1;
  }
  c->mesh_job = j;
  j->req = ++c->g->next_req;
  c->pend = PEND_JSON;
  c->pend_action = pa_json_action_id(x->act);
  pa_gw_wait_local(c, j->req, MESH_WAIT_MS);
  return 2;
}
