/* pa_visual.h - viewer-only annotations (RaisimServer's visual objects):
 * shapes, polylines, point clouds and labels a client adds by name. pa-netgw
 * writes the block (in the ctl segment, under its seqlock), the viewer
 * copies what is in use and draws it; the simulation, the laser and the
 * head camera never read it. It lives as long as the instance, so it
 * survives a crash of any process. */
#ifndef PA_VISUAL_H
#define PA_VISUAL_H

#include <stdint.h>

#define PA_VIS_MAX 256             /* visuals at once */
#define PA_VIS_NAME_MAX 48         /* bytes of a name, NUL included */
#define PA_VIS_TEXT_MAX 64         /* bytes of a text label, NUL included */
#define PA_VIS_CLOUD_MAX 100000    /* points of one point cloud */
#define PA_VIS_POINTS_MAX 262144   /* points of all visuals (4 MiB) */
#define PA_VIS_MESH_TRIS_MAX 50000 /* triangles of one mesh */
#define PA_VIS_GRID_MAX 65536      /* samples of one height map */
#define PA_VIS_INST_MAX 20000      /* instances of one instanced visual */

typedef enum pa_vis_type {
  PA_VIS_NONE = 0,
  PA_VIS_SPHERE,      /* size[0] radius */
  PA_VIS_BOX,         /* size x, y, z (full lengths) */
  PA_VIS_CYLINDER,    /* size[0] radius, size[1] height (along local z) */
  PA_VIS_CAPSULE,     /* size[0] radius, size[1] height between the caps */
  PA_VIS_ARROW,       /* size[0] length along local x, size[1] head size */
  PA_VIS_POLYLINE,    /* points (world), size[0] width [px] */
  PA_VIS_POINT_CLOUD, /* points (world), size[0] point size [px] */
  PA_VIS_TEXT,        /* text at pos, size[0] height [m] (stroke font) */
  PA_VIS_MESH,        /* triangles: points 3k..3k+2 (local), size = scale */
  PA_VIS_HEIGHTMAP,   /* grid_nx x grid_ny points (local x, y, height),
                         row-major from -x -y; size[0], size[1] extent */
  PA_VIS_INSTANCED,   /* inst_stride points per instance (below), each a
                         inst_shape of size, in the visual's frame */
  PA_VIS_TYPE_COUNT
} pa_vis_type;

typedef struct pa_vis_point {
  float p[3];    /* world x, y, z [m] */
  uint32_t rgba; /* 0xRRGGBBAA; 0 = the visual's colour */
} pa_vis_point;

typedef struct pa_visual {
  char name[PA_VIS_NAME_MAX];
  uint32_t type;    /* pa_vis_type */
  uint32_t visible; /* 0 = kept but not drawn */
  float pos[3];     /* world [m] */
  float quat[4];    /* orientation w, x, y, z */
  float size[3];
  float rgba[4];
  uint32_t pt_off, pt_n; /* its points: block pt[pt_off, pt_off + pt_n) */
  char text[PA_VIS_TEXT_MAX];
  uint32_t camera_visible;   /* 1 = the head cameras see it too */
  uint32_t grid_nx, grid_ny; /* height map: samples along x, y */
  uint32_t inst_shape;       /* instanced: sphere .. arrow (pa_vis_type) */
  /* instanced: points per instance: 1 = position (+ rgba), 2 = and the
   * orientation's x, y, z (w = sqrt(1 - x2 - y2 - z2) >= 0), 3 = and a
   * scale x, y, z of size */
  uint32_t inst_stride;
  uint32_t colormap; /* mesh / height map: 1 = points carry colours from the
                        height colormap (re-made when heights change) */
  uint32_t reserved2;
} pa_visual;

/* The spectator camera (independent of robots) and the screenshot and
 * video requests pa-render serves with it (RaisimServer's setCamera...,
 * focusOn, requestSaveScreenshot, start/stopRecordingVideo). pa-netgw
 * writes the request fields and then bumps the request counters; pa-render
 * answers by copying a counter into its done field. */
#define PA_SPEC_NAME_MAX 64
#define PA_SPEC_DIR_MAX 512
enum { PA_SPEC_FOCUS_NONE = 0, PA_SPEC_FOCUS_ROBOT, PA_SPEC_FOCUS_OBSTACLE };
enum { PA_REC_IDLE = 0, PA_REC_ON, PA_REC_FAILED };
typedef struct pa_spectator {
  /* pa-netgw: the camera, under cam_seq (odd while written) */
  uint64_t cam_seq;
  float pos[3], look_at[3]; /* world [m]; pos == look_at: not set */
  uint32_t focus_kind;      /* PA_SPEC_FOCUS_* : look_at follows it */
  uint32_t focus_idx;       /* robot or obstacle index */
  uint32_t width, height;   /* [px] screenshots and videos */
  /* pa-netgw: requests */
  uint32_t shot_req; /* bumped per screenshot request */
  char shot_name[PA_SPEC_NAME_MAX];
  uint32_t rec_req;   /* bumped per start or stop */
  uint32_t rec_start; /* 1 = start rec_name, 0 = stop */
  char rec_name[PA_SPEC_NAME_MAX];
  float rec_fps;
  uint32_t rec_frames_max; /* stop by itself after this many (0 = never) */
  /* pa-render */
  int32_t render_pid;               /* pa-render serving these (0 = none) */
  char dir[PA_SPEC_DIR_MAX];        /* its --data_dir, absolute */
  uint32_t shot_done;               /* = shot_req once written (or failed) */
  int32_t shot_status;              /* 0 ok, -1 failed (see its log) */
  uint32_t rec_done;                /* = rec_req once acted on */
  uint32_t rec_state;               /* PA_REC_* */
  uint64_t rec_frames, rec_dropped; /* of the current or last video */
  char rec_codec[16];               /* "h264" (libx264) or "mpeg4" */
  /* pa-netgw, with shot_name / rec_name: 1 = replace an existing file
   * (the request's overwrite: true); 0 = refuse it */
  uint32_t shot_overwrite, rec_overwrite;
} pa_spectator;

typedef struct pa_visual_block {
  uint64_t seq;     /* odd while being written */
  uint32_t gen;     /* bumped on every change */
  uint32_t count;   /* v[0, count) are in use, in insertion order */
  uint32_t pt_used; /* pt[0, pt_used) are in use (packed) */
  uint32_t reserved;
  pa_spectator spec; /* not under seq: see pa_spectator */
  pa_visual v[PA_VIS_MAX];
  pa_vis_point pt[PA_VIS_POINTS_MAX];
} pa_visual_block;

/* Type name ("sphere", ...) and back (PA_VIS_NONE when unknown). */
const char *pa_vis_type_name(uint32_t t);
uint32_t pa_vis_type_from_name(const char *s);

#endif /* PA_VISUAL_H */
