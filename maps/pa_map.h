/*
 * pa_map.h - maps and worlds for playarea (library pa_map).
 *
 * ROS map_server maps (map.yaml + image) into an occupancy grid, the built-in
 * default world, YAML world files (map + robots + static obstacles), the
 * shared --map_* / --world flags, saving, and an exact Euclidean distance
 * field for collision checks and ray marching.
 *
 * Conventions: x east, y north, theta counter-clockwise. Grid row 0 is the
 * SOUTH edge (the image is flipped on load: image row 0 is north), column 0
 * the west edge. The origin is the world pose of the outer corner of cell
 * (0, 0) (the bottom-left pixel), as in map_server.
 *
 * The loaded grid and world are immutable after load.
 */
#ifndef PA_MAP_H
#define PA_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PA_MAP_PATH_MAX 4096
#define PA_MAP_NAME_MAX 32
/* Accepted map resolution [m/cell] and origin x, y magnitude [m]. */
#define PA_MAP_RES_MIN 1e-4
#define PA_MAP_RES_MAX 1e3
#define PA_MAP_ORIGIN_MAX 1e7

/* Cell values, as ROS nav_msgs/OccupancyGrid. */
#define PA_CELL_UNKNOWN ((int8_t)-1)
#define PA_CELL_FREE ((int8_t)0)
#define PA_CELL_OCCUPIED ((int8_t)100)

typedef enum pa_map_mode {
  PA_MAP_TRINARY = 0, /* default: 0 free, 100 occupied, -1 unknown */
  PA_MAP_SCALE = 1,   /* free 0, occupied 100, in between scaled, -1 unknown */
  PA_MAP_RAW = 2,     /* the grey value itself, as map_server does (pa_map.c) */
} pa_map_mode;

/* How to load a map: what map.yaml says, or the --map_* flags. */
typedef struct pa_map_def {
  char image[PA_MAP_PATH_MAX]; /* resolved path ("" = built-in default map) */
  double resolution;           /* [m/pixel] */
  double origin[3];            /* x [m], y [m], yaw [rad] of the bottom-left pixel */
  int negate;                  /* 0 or 1 */
  double occupied_thresh;      /* [0, 1] */
  double free_thresh;          /* [0, 1] */
  pa_map_mode mode;
  uint32_t max_width, max_height; /* refuse bigger images; default 8192 */
  /* Keys of a map.yaml file that map_server's format does not have, ignored
   * as map_server ignores them ("a, b"; "" = none): the caller warns. */
  char ignored_keys[160];
} pa_map_def;
pa_map_def pa_map_def_default(void);

typedef struct pa_grid {
  uint32_t width, height;  /* [cells] */
  double resolution;       /* [m/cell] */
  double origin_x, origin_y, origin_yaw; /* [m, m, rad] */
  int8_t *cells;           /* [width * height], row 0 = south; -1, 0..100 */
  int8_t occupied_min;     /* a cell >= this value blocks (100 in trinary) */
} pa_grid;

/* Parses map.yaml (libyaml) into def (every field, size limits back to the
 * default; set max_width/max_height afterwards to lower them); image is
 * resolved relative to the yaml file's directory. Errors name
 * file:line:column and the key. Format: docs/world-format.md. */
int pa_map_parse_yaml(const char *yaml_path, pa_map_def *def, char *err,
                      size_t err_sz);
/* Loads the image named by def (stb_image: PNG, PGM, BMP, JPEG; grey, grey+
 * alpha, RGB, RGBA) with map_server semantics. An empty def->image loads the
 * built-in default map. */
int pa_map_load(const pa_map_def *def, pa_grid *out, char *err, size_t err_sz);
/* map.yaml path -> grid. */
int pa_map_load_yaml(const char *yaml_path, pa_grid *out, char *err,
                     size_t err_sz);
/* The built-in default map (compiled into the library). */
int pa_map_load_default(pa_grid *out, char *err, size_t err_sz);
/* Writes png_path (.png, .pgm or .bmp) + yaml_path so that loading the yaml
 * gives back exactly the same cells, resolution and origin: trinary, negate 0
 * (0/254/205) when the cells are only -1/0/100, else raw with negate 1. */
int pa_map_save(const pa_grid *g, const char *yaml_path, const char *png_path,
                char *err, size_t err_sz);
/* pa_map_save with the image's name in the yaml (and its format, by its
 * extension) given apart from the path it is written to: for writers that
 * write through /proc/self/fd/N into temporary files (pa_safefile). */
int pa_map_save_named(const pa_grid *g, const char *yaml_path,
                      const char *png_path, const char *image_name, char *err,
                      size_t err_sz);
void pa_grid_free(pa_grid *g);

/* Files a client names at run time (set_map, set_scenario): every file read
 * (the yaml, a world's map.yaml, the image) must resolve, symlinks followed,
 * inside data_dir (canonical, as realpath gives it); '..' and absolute paths
 * outside are refused by name before anything is looked up; errors never
 * quote file content. A NULL guard (startup flags) reads any file. */
typedef struct pa_map_guard {
  const char *data_dir;
} pa_map_guard;
/* path -> its canonical form inside g's data directory (relative paths are
 * taken from it), or -1 with "forbidden path (...): <path>" or why not. */
int pa_map_guard_path(const pa_map_guard *g, const char *path, char *out,
                      size_t out_sz, char *err, size_t err_sz);
int pa_map_load_g(const pa_map_def *def, const pa_map_guard *g, pa_grid *out,
                  char *err, size_t err_sz);
int pa_map_load_yaml_g(const char *yaml_path, const pa_map_guard *g,
                       pa_grid *out, char *err, size_t err_sz);
/* pa_map_load_yaml_g, and the map.yaml keys map_server does not read (so
 * ignored) named in ignored ("" for none) for the caller to warn about. */
int pa_map_load_yaml_gk(const char *yaml_path, const pa_map_guard *g,
                        pa_grid *out, char *ignored, size_t ignored_sz,
                        char *err, size_t err_sz);

/* A generated map (pa_mapgen.c): a building width x height [m] of
 * rooms_x x rooms_y rooms joined by 0.9 m doors, 10 cm walls, `clutter`
 * boxes of 0.2-0.6 m per room; the world origin is the centre of the middle
 * room (rooms_x / 2, rooms_y / 2), clear of boxes. The same parameters give
 * the same cells. */
typedef struct pa_mapgen {
  double width, height;    /* [m], 2..500 (at most 8192 cells a side) */
  double resolution;       /* [m/cell], 0.01..1 */
  uint64_t seed;
  uint32_t rooms_x, rooms_y; /* 1..32, rooms >= 1.5 m */
  uint32_t clutter;        /* boxes per room, 0..64 */
} pa_mapgen;
pa_mapgen pa_mapgen_default(void); /* 20 x 15 m, 0.05 m, 3 x 2 rooms, 2 */
/* 0, or -1 with a message naming the parameter. */
int pa_mapgen_check(const pa_mapgen *p, char *err, size_t err_sz);
int pa_map_generate(const pa_mapgen *p, pa_grid *out, char *err,
                    size_t err_sz);

/* The built-in named scenarios (pa_scenario.c; set_scenario {"scenario"}):
 * Empty, Rooms, NarrowMap, Maze, Corridor, Warehouse, Forest. Name and
 * description of row i (NULL past the end), the row of a name (any case;
 * -1 if none), and its map for a seed (the same seed, the same cells). */
const char *pa_scenario_name(int i);
const char *pa_scenario_about(int i);
int pa_scenario_find(const char *name);
int pa_scenario_generate(int id, uint64_t seed, pa_grid *out, char *err,
                         size_t err_sz);

/* Cell containing world point (x, y); false if outside the grid. Handles
 * origin yaw. */
bool pa_grid_world_to_cell(const pa_grid *g, double x, double y, int *cx,
                           int *cy);
/* World coordinates of a cell's centre. */
void pa_grid_cell_center(const pa_grid *g, int cx, int cy, double *x,
                         double *y);
/* True when the cell blocks motion and rays: value >= occupied_min, or
 * unknown when unknown_blocks, or outside the grid. */
bool pa_grid_blocked(const pa_grid *g, int cx, int cy, bool unknown_blocks);

/* ---- distance field ----------------------------------------------------- */

typedef struct pa_dist {
  uint32_t width, height;  /* same as the grid */
  double resolution;
  float *d;                /* [width * height] distance [m] from the cell's
                              centre to the nearest blocked cell's centre;
                              0 in blocked cells */
} pa_dist;

/* Exact Euclidean distance transform (Felzenszwalb-Huttenlocher) of the
 * blocked cells. Outside the grid counts as blocked. */
int pa_dist_build(const pa_grid *g, bool unknown_blocks, pa_dist *out,
                  char *err, size_t err_sz);
void pa_dist_free(pa_dist *d);

/* ---- worlds ------------------------------------------------------------- */

typedef struct pa_laser_def {
  uint32_t beams;          /* default 360 */
  double range_min;        /* [m] default 0.15 */
  double range_max;        /* [m] default 12.0 (a small indoor 2D lidar) */
  double noise;            /* Gaussian sigma [m], default 0 */
} pa_laser_def;

typedef struct pa_camera_def {
  uint32_t width, height;  /* [px] default 640 x 480 */
  double fov;              /* horizontal [rad], default 60 deg */
} pa_camera_def;

/* A thruster of a dynamic robot (pa_layout.h pa_thruster). */
#define PA_MAP_THRUSTERS_MAX 8
typedef struct pa_thruster_def {
  char name[16];
  double x, y;      /* body frame [m] (x forward, y left) */
  double dir;       /* direction of a positive push [rad] from body x */
  double max_force; /* [N] */
} pa_thruster_def;

typedef struct pa_robot_def {
  char name[PA_MAP_NAME_MAX];  /* default "robot<i>" */
  double x, y, theta;      /* start pose [m, m, rad] */
  int drive;               /* 0 differential, 1 omni (enum pa_drive) */
  double radius;           /* [m] default 0.18 */
  double wheel_base;       /* differential: wheel separation [m]; 0 (the
                            * default) = 1.6 x radius */
  double height;           /* [m] default 0.25 */
  double head_height;      /* camera height [m] default 0.35 */
  uint8_t colour[4];       /* RGBA */
  double max_v, max_vy, max_w;   /* default 1.0 m/s, 1.0 m/s (omni), 3.0 rad/s */
  double acc_v, dec_v;     /* default 2.0, 4.0 m/s^2 */
  double acc_w, dec_w;     /* default 8.0, 12.0 rad/s^2 */
  double head_limit;       /* default 2.6 rad (about 150 deg each side) */
  double max_head_rate;    /* default 3.0 rad/s */
  pa_laser_def laser;
  pa_camera_def camera;
  /* dynamics: 0 kinematic (default), 1 dynamic (enum pa_dynamics) */
  int dynamics;
  double mass, inertia;            /* default 10 kg, 0.2 kg m^2 */
  double lin_damping, ang_damping; /* default 10 N s/m, 1 N m s/rad */
  double max_force, max_torque;    /* default 40 N, 5 N m */
  pa_thruster_def thrusters[PA_MAP_THRUSTERS_MAX];
  size_t thruster_count;
  /* Properties without a named field above: a row of pa_props.h names its
   * slot (ext[k]) and pa_prop_def_get/_put read and write it, so a new
   * property needs no edit here. */
  double ext[8];
  /* No pose was given (the default world's robot0, a world file without
   * robots): pa-sim starts it on the free pose nearest (0, 0) instead of
   * refusing a map whose (0, 0) is blocked (sim_model.c). */
  bool place_near_origin;
} pa_robot_def;
pa_robot_def pa_robot_def_default(void);

typedef struct pa_obstacle_def {
  char name[PA_MAP_NAME_MAX];
  int shape;               /* 0 box, 1 circle (enum pa_shape) */
  double x, y, theta;      /* centre pose */
  double size_x, size_y;   /* box full extents [m] */
  double radius;           /* circle [m] */
  double height;           /* [m] default 0.5 */
  uint8_t colour[4];
  /* Agents (the world file's agents: list): enum pa_agent, 0 = static. */
  int agent;
  double speed;           /* [m/s] default 0.5 */
  double waypoints[7][2]; /* PA_AGENT_WAYPOINTS_MAX */
  size_t waypoint_count;
} pa_obstacle_def;

typedef struct pa_world {
  pa_map_def map;              /* image "" = built-in default map */
  pa_robot_def *robots;        /* [robot_count] */
  size_t robot_count;
  pa_obstacle_def *obstacles;  /* [obstacle_count] */
  size_t obstacle_count;
  bool unknown_blocks;         /* default true */
  /* An `ssl:` section (docs/ssl.md): the field of this division ('A' /
   * 'B', 0 = none) is the map; robots_given = the file lists its robots
   * (else ssl_robots per team, 0 = 11 in A, 6 in B, are placed). */
  char ssl_division;
  uint32_t ssl_robots;
  bool robots_given;
} pa_world;

/* Parses a world file. Errors are "file:line:column: message". */
int pa_world_load(const char *path, pa_world *w, char *err, size_t err_sz);
/* The default world: built-in map, one robot "robot0" at the start pose. */
int pa_world_default(pa_world *w, char *err, size_t err_sz);
void pa_world_free(pa_world *w);
/* pa_world_load confined by g (see pa_map_guard); the world's map image is
 * read later, by pa_map_load_g with the same guard. */
int pa_world_load_g(const char *path, const pa_map_guard *g, pa_world *w,
                    char *err, size_t err_sz);

/* ---- the flags every process shares ------------------------------------- */

/* --world, --map_yaml, --map_image, --map_resolution, --map_origin_x,
 * --map_origin_y, --map_negate, --map_occupied_thresh, --map_free_thresh.
 * Fill the struct from the command line (strings may stay NULL), then
 * resolve: --world wins; else --map_yaml PATH; --map_yaml "" means use
 * --map_image and the other --map_* flags; nothing given = default world. */
typedef struct pa_map_flags {
  const char *world;
  const char *map_yaml;    /* NULL = not given; "" = use --map_image */
  const char *map_image;
  double map_resolution;   /* default 0.05 */
  double map_origin_x, map_origin_y;
  long map_negate;         /* 0 or 1 */
  double map_occupied_thresh; /* 0.65 */
  double map_free_thresh;  /* 0.196 */
  /* "x,y,yaw" [m, m, rad]: robot 0's start pose (wins over a world file's;
   * NULL or "" = the world's, or the free pose nearest (0, 0)). */
  const char *robot_pose;
  /* "blocked" or "free": how unknown map cells act (wins over a world
   * file's unknown_blocks; NULL or "" = the world's, blocked by default). */
  const char *map_unknown;
} pa_map_flags;
pa_map_flags pa_map_flags_default(void);
/* Produces the world the flags describe (robots default to one robot0 unless
 * a world file gives robots). */
int pa_map_flags_resolve(const pa_map_flags *f, pa_world *w, char *err,
                         size_t err_sz);

#ifdef __cplusplus
}
#endif
#endif /* PA_MAP_H */
