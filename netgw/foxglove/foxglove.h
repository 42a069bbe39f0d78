/* foxglove.h - private to pa_netgw: the Foxglove WebSocket server
 * (foxglove.c, ws-protocol v1 on ws.h), the channel encoders
 * (foxglove_msgs.c: Foxglove's well-known schemas, JSON encoded;
 * foxglove_scene.c: /scene) and the MCAP
 * recorder that writes the same channels (foxglove.c on mcap.h). */
#ifndef PA_FOXGLOVE_H
#define PA_FOXGLOVE_H

#include "mcap.h"
#include "netgw_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- foxglove_msgs.c: encoders ------------------------------------- */

/* The kinds of channel: three for the world, five per robot, and the
 * commands log a recording keeps for replay. */
enum {
  PA_FOX_MAP = 0,  /* /map        foxglove.Grid */
  PA_FOX_TF,       /* /tf         foxglove.FrameTransforms */
  PA_FOX_SCENE,    /* /scene      foxglove.SceneUpdate */
  PA_FOX_COMMANDS, /* /commands   playarea.Command (recordings only) */
  PA_FOX_STATE,    /* /state      playarea.State (recordings: at the end) */
  PA_FOX_SCAN,     /* /<robot>/scan   foxglove.LaserScan */
  PA_FOX_ODOM,     /* /<robot>/odom   playarea.Odometry */
  PA_FOX_CAMERA,   /* /<robot>/camera foxglove.CompressedImage */
  PA_FOX_POSE,     /* /<robot>/pose   foxglove.PoseInFrame (odometry) */
  PA_FOX_CAMINFO,  /* /<robot>/camera_info foxglove.CameraCalibration */
  PA_FOX_KINDS
};
#define PA_FOX_WORLD_KINDS 5 /* kinds before PA_FOX_SCAN: one channel each */
#define PA_FOX_ROBOT_KINDS 5

/* A growable text/byte buffer; oom set once an allocation failed. */
typedef struct pa_fox_buf {
  char *p;
  size_t n, cap;
  bool oom;
} pa_fox_buf;

void pa_fox_buf_put(pa_fox_buf *b, const void *d, size_t n);
void pa_fox_buf_printf(pa_fox_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pa_fox_buf_free(pa_fox_buf *b);

/* JSON pieces the encoders share (foxglove_msgs.c; foxglove_scene.c's
 * /scene is built of them too). */
/* A finite number, or 0 (JSON has no NaN). */
void pa_fox_num(pa_fox_buf *b, double v);
/* s as a JSON string, quoted and escaped. */
void pa_fox_str(pa_fox_buf *b, const char *s);
/* A header stamp {"sec","nsec"}. */
void pa_fox_stamp(pa_fox_buf *b, uint64_t t_ns);
void pa_fox_vec3(pa_fox_buf *b, double x, double y, double z);
/* A pose at x, y, z turned by yaw about z. */
void pa_fox_pose(pa_fox_buf *b, double x, double y, double z, double yaw);
/* An 8-bit RGBA colour; alpha 0 = opaque. */
void pa_fox_color(pa_fox_buf *b, const uint8_t c[4]);

const char *pa_fox_schema_name(int kind);
/* The JSON Schema text of a kind (schemaEncoding "jsonschema"). */
const char *pa_fox_schema(int kind);
/* "/map", or "/<robot>/scan" for a robot kind, into out. */
void pa_fox_topic(int kind, const char *robot, char *out, size_t sz);

/* Encoders: append one message's JSON to b. Frames are "map",
 * "<robot>/base_link", "<robot>/laser", "<robot>/camera". */
void pa_fox_enc_grid(pa_fox_buf *b, uint64_t t_ns, const pa_map_block *m,
                     const int8_t *cells);
void pa_fox_enc_scan(pa_fox_buf *b, const char *robot, const pa_scan *s);
/* t: the tick; info[i]/rs of each robot found active in both. */
void pa_fox_enc_tf(pa_fox_buf *b, uint64_t t_ns, const pa_robot_info *info,
                   const pa_robot_state *const *rs, uint32_t n);
/* The pinhole calibration of image f (fov: the camera's horizontal field of
 * view [rad]) as foxglove.CameraCalibration in frame R/camera_optical. */
void pa_fox_enc_caminfo(pa_fox_buf *b, const char *robot, const pa_frame *f,
                        double fov);
/* The odometry pose as foxglove.PoseInFrame in frame R/odom. */
void pa_fox_enc_pose(pa_fox_buf *b, uint64_t t_ns, const char *robot,
                     const pa_robot_state *rs);
void pa_fox_enc_odom(pa_fox_buf *b, uint64_t t_ns, const char *robot,
                     const pa_robot_state *rs);
/* JPEG through libturbojpeg, as JSON or (pb) protobuf; -1 when it failed
 * (err says why). */
int pa_fox_enc_image(pa_fox_buf *b, void *tj, const char *robot,
                     const pa_frame *f, int quality, bool pb, char *err,
                     size_t sz);
/* n bytes as base64 text. */
void pa_fox_base64(pa_fox_buf *b, const uint8_t *in, size_t n);

/* ---- foxglove_pb.c: the protobuf encoding ------------------------- */

/* Whether kind's channels go protobuf (--foxglove_encoding protobuf: the
 * scans, the camera images and /scene). */
bool pa_fox_pb_kind(const pa_netgw *g, int kind);
/* The schemas' FileDescriptorSet (built by protoc), raw and as base64. */
const uint8_t *pa_fox_pb_fds(size_t *len);
const char *pa_fox_pb_schema_b64(void);
/* foxglove.LaserScan (no return: +inf) and CompressedImage, packed. */
void pa_fox_pb_scan(pa_fox_buf *b, const char *robot, const pa_scan *s);
void pa_fox_pb_image(pa_fox_buf *b, const char *robot, const pa_frame *f,
                     const uint8_t *jpeg, size_t n);
/* Any protoc-c message (a ProtobufCMessage *) packed onto b. */
void pa_fox_pb_pack(pa_fox_buf *b, const void *msg);
/* A google.protobuf.Timestamp (its protoc-c struct) from nanoseconds. */
void pa_fox_pb_stamp(void *timestamp, uint64_t t_ns);

/* ---- foxglove_scene.c: /scene ------------------------------------- */

/* A SceneEntity's primitive lists, in the schema's field order. */
enum {
  PA_FOX_PR_ARROW,
  PA_FOX_PR_CUBE,
  PA_FOX_PR_SPHERE,
  PA_FOX_PR_CYLINDER,
  PA_FOX_PR_LINE,
  PA_FOX_PR_TRIANGLES,
  PA_FOX_PR_TEXT,
  PA_FOX_PR_MODEL,
  PA_FOX_PRIMS
};

/* One primitive of any kind: the fields its kind has are read. */
typedef struct pa_fox_prim {
  int kind;       /* PA_FOX_PR_* */
  double pos[3];  /* [m] */
  double q[4];    /* orientation w, x, y, z */
  double size[3]; /* [m] cube, sphere, cylinder; model: its scale */
  float color[4]; /* r, g, b, a in 0..1 */
  double bottom_scale, top_scale; /* cylinder */
  double shaft_length, shaft_diameter, head_length, head_diameter; /* arrow */
  int line_type;                   /* line: 0 strip, 1 loop, 2 list */
  double thickness;                /* line */
  bool scale_invariant, billboard; /* line, text; text */
  double font_size;                /* text */
  const char *text;                /* text */
  const double (*pts)[3];          /* line, triangles: n_pts points */
  const float (*colors)[4];        /* per point (n_colors: 0 or n_pts) */
  const uint32_t *idx;             /* indices into pts (n_idx; 0 = all) */
  uint32_t n_pts, n_colors, n_idx;
  bool override_color;          /* model */
  const char *url, *media_type; /* model */
  const uint8_t *data;          /* model: data_len bytes */
  size_t data_len;
} pa_fox_prim;

/* An encoding of /scene (foxglove_scene_be.c): the builder describes each
 * entity once and the back-end writes it. An update is part(0), the
 * entities, part(1), the deletions, part(2). */
typedef struct pa_fox_scene_be {
  /* the entity's fields but its timestamp and primitives; meta is
   * key, value, ..., NULL */
  void (*head)(pa_fox_buf *h, const char *frame, const char *id, bool locked,
               const char *const *meta);
  /* appends one primitive to its kind's list */
  void (*prim)(pa_fox_buf *list, const pa_fox_prim *p);
  /* the whole entity into b; n: entities written before it */
  void (*entity)(pa_fox_buf *b, size_t n, uint64_t t_ns, const pa_fox_buf *h,
                 const pa_fox_buf lists[PA_FOX_PRIMS]);
  /* deletion n: of id, or of all (id NULL) */
  void (*deletion)(pa_fox_buf *b, size_t n, uint64_t t_ns, const char *id);
  void (*part)(pa_fox_buf *b, int part);
} pa_fox_scene_be;
extern const pa_fox_scene_be pa_fox_scene_json, pa_fox_scene_pb;

/* An update being built; a scene addition of a later feature (a hook) adds
 * its entities through pa_fox_scene_open/add/close. */
typedef struct pa_fox_scene_ctx pa_fox_scene_ctx;
typedef void (*pa_fox_scene_hook)(pa_netgw *g, pa_fox_scene_ctx *x);
void pa_fox_scene_open(pa_fox_scene_ctx *x, const char *id,
                       const char *const *meta);
void pa_fox_scene_add(pa_fox_scene_ctx *x, const pa_fox_prim *p);
void pa_fox_scene_close(pa_fox_scene_ctx *x);

#define PA_FOX_CLOUD_CUBES 5000 /* a point cloud's cubes in /scene at most */
#define PA_FOX_BALL_RADIUS 0.021335 /* [m] as pa-sim's (sim_ssl.h) */

/* What the last /scene update held, per entity id, so the next one carries
 * only what changed and deletes what is gone. Zeroed = nothing sent. */
struct pa_fox_ent_memo;
typedef struct pa_fox_scene_memo {
  struct pa_fox_ent_memo *prev, *cur;
  uint32_t n_prev, cap_prev, n_cur, cap_cur;
  uint32_t vis_gen; /* the visuals' gen the entities of prev show */
  bool have_vis;
  pa_fox_buf prim[PA_FOX_PRIMS], head; /* scratch: the entity's parts */
  pa_fox_buf pts;                      /* scratch: a primitive's arrays */
} pa_fox_scene_memo;
void pa_fox_scene_memo_free(pa_fox_scene_memo *m);

/* ---- foxglove_vis.c: meshes, height maps and instances for /scene ---- */
/* The triangle list of a mesh or height-map visual of n points: its
 * vertices in the visual's frame (a mesh scaled by its size), 3 a
 * triangle, and a colour each (*colors NULL when all are the visual's);
 * both malloc'd. Returns how many (0: none, nothing allocated). */
uint32_t pa_fox_vis_tris(const pa_visual *v, const pa_vis_point *pt, uint32_t n,
                         double (**pts)[3], float (**colors)[4]);
/* The instances of an instanced visual of n points. */
uint32_t pa_fox_vis_instances(const pa_visual *v, uint32_t n);
/* Instance k in the world: position, orientation w, x, y, z, scale of
 * the visual's size, colour. */
void pa_fox_vis_instance(const pa_visual *v, const pa_vis_point *pt, uint32_t k,
                         double pos[3], double q[4], double s[3],
                         float color[4]);

/* What /scene shows: obstacles and agents (world snapshot copies), the
 * navigation drawings, the SSL ball of a tick, the visual objects. */
typedef struct pa_fox_scene_in {
  const pa_obstacle_info *obs;
  uint32_t n_obs;
  const pa_nav_block *nav;
  const pa_robot_info *robots;
  uint32_t n_robots;
  const pa_tick *tick;        /* NULL = no ball */
  const pa_visual_block *vis; /* NULL = not read yet */
} pa_fox_scene_in;

/* Appends one foxglove.SceneUpdate to b, encoded by be. full: deletes all, then
 * every entity; else only the entities that differ from the memo's last update,
 * and deletions of those gone. Returns how many entities and deletions it
 * holds (0: nothing changed, or out of memory). */
size_t pa_fox_enc_scene(pa_fox_buf *b, const pa_fox_scene_be *be, uint64_t t_ns,
                        const pa_fox_scene_in *in, pa_fox_scene_memo *m,
                        bool full, pa_netgw *g, const pa_fox_scene_hook *hooks,
                        size_t n_hooks);
/* ---- foxglove_msgs.c: the commands log and the state -------------- */

/* One command pushed to pa-sim, for /commands. */
void pa_fox_enc_command(pa_fox_buf *b, uint64_t tick, const pa_cmd *c);
/* /commands JSON back into a command: 0, or -1 when malformed. */
int pa_fox_dec_command(const char *json, size_t len, pa_cmd *c);
/* The full state of the robots at tick t, doubles exact (%.17g), for a
 * replay's comparison. */
void pa_fox_enc_state(pa_fox_buf *b, const pa_tick *t,
                      const pa_robot_info *info, uint32_t n);
/* Compares a /state message with tick t: 0 when every robot's state is
 * the same to the bit, else -1 with the first difference in why. */
int pa_fox_cmp_state(const char *json, size_t len, const pa_tick *t, char *why,
                     size_t why_sz);

/* The sim time of a tick record in ns (log times, header stamps). */
static inline uint64_t pa_fox_ns(double sim_time) {
  return sim_time > 0 ? (uint64_t)(sim_time * 1e9 + 0.5) : 0;
}

/* ---- foxglove.c: the server and the recorder ----------------------- */

typedef struct pa_fox pa_fox;

/* its row in the front-end table (foxglove_fe.c) */
extern const pa_frontend pa_fe_foxglove;

/* Listens on def.foxglove_port (0 = no server; the recorder still works).
 * NULL with err on failure ("cannot listen ..." for a taken port). */
pa_fox *pa_fox_create(pa_netgw *g, char *err, size_t err_sz);
void pa_fox_destroy(pa_fox *f);
unsigned pa_fox_port(const pa_fox *f); /* 0 = no server */

/* Every command pushed to pa-sim (any client), for the recording. */
void pa_fox_note_command(pa_netgw *g, const pa_cmd *cmd);

/* Starts recording into path (already checked): topics NULL = all, else a
 * NULL-terminated list of topics ("/map", "/r0/scan", or "/r0/ *" style
 * prefixes ending in '*'); seconds > 0 stops after that much sim time.
 * -1 with err when a recording runs or the file cannot be created. */
int pa_fox_record_start(pa_fox *f, const char *path, const char *const *topics,
                        double seconds, char *err, size_t err_sz);
/* Stops and finishes the file: 0 and st, or -1 (none running, or the
 * writer failed: err). */
int pa_fox_record_stop(pa_fox *f, pa_mcap_stats *st, char *path, size_t path_sz,
                       char *err, size_t err_sz);

/* foxglove_rec.c: --record's file at (re)start: in ("run.mcap") when it
 * does not exist, else the first free "run.1.mcap", "run.2.mcap", ... (a
 * restarted pa-netgw continues into a new file, never over one); checked
 * as pa_core_data_path. 0 and the full path, or -1 with err. */
int pa_fox_record_next_path(const pa_netgw *g, const char *in, char *out,
                            size_t out_sz, char *err, size_t err_sz);

/* Replays a recording's /commands (docs/foxglove.md "Replay"): a worker
 * thread reads the file (state "loading"), then the loop pauses the sim,
 * pushes them in order, and compares the state with the recording's last
 * /state. -1 with err when a replay runs. When the load ends, client
 * client_id gets the reply to request req through pa_gw_local_reply: ok,
 * or why the file cannot be replayed. The outcome shows in
 * pa_fox_info.replay. */
int pa_fox_replay_start(pa_fox *f, const char *path, uint64_t client_id,
                        uint64_t req, char *err, size_t err_sz);

typedef struct pa_fox_info {
  unsigned port;
  uint32_t clients;
  uint64_t sent, dropped; /* messages to clients; dropped by backpressure */
  uint64_t jpeg_frames;   /* camera images encoded */
  bool recording;
  char record_path[256];
  /* the recording writer's first I/O error ("" = none) */
  char record_error[256];
  pa_mcap_stats rec; /* of the running recording */
  /* the last replay: "" (none), loading, running, match, mismatch, failed */
  const char *replay;
  const char *replay_path; /* its file (NULL: none); valid until the next */
  uint32_t replay_pushed, replay_total, replay_errors;
  char replay_detail[256];
} pa_fox_info;
void pa_fox_get_info(pa_fox *f, pa_fox_info *out);

#endif
