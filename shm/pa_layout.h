/*
 * pa_layout.h - the instance layout of playarea: what travels through the
 * shared segments and what it means.
 *
 * The records (pa_tick, pa_scan, pa_frame, pa_cmd, pa_reply), the control
 * block (pa_ctl, pa_health, robot/obstacle info, camera demand, navigation
 * overlays, the map block) and the protocol enums (pa_op, pa_status,
 * pa_prop, ...), with the few checks every side of a record must agree on
 * (pa_cmd_drive_error). No pointers, no functions of the primitives.
 * pa_shm.h includes it, so code includes pa_shm.h alone; it stands by itself
 * (only system headers) so it never includes pa_shm.h back.
 */
#ifndef PA_LAYOUT_H
#define PA_LAYOUT_H

#include <semaphore.h>
#include "pa_visual.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a shared struct changes; an attacher of another version
 * is refused by name ("layout version is 1, expected 2"). 2: typed
 * pa_cmd / pa_reply arguments; 4: pa_ctl.reply_watch_until; 6: the
 * observation segment and a STEP's obs_first/obs_count; 7: pa_robot_info
 * .acc_vy (was reserved2), pa-netgw's kept ports, the last odom seq sent;
 * 8: pa_obstacle_info.vx, vy (agents' velocities); 9: mesh, height-map
 * and instanced visuals (pa_visual grid_nx .. colormap, a 4 MiB pool);
 * 10: pa_ctl.lane (a same-host client's STEP without pa-netgw); 11: the
 * lane's batch (pa_lane.count, act_off: many robots' actions); 12: the
 * observation's sectors (pa_lane.beams, pa_cmd_step.obs_beams). */
#define PA_SHM_LAYOUT_VERSION 12u
#define PA_SHM_INSTANCE_MAX 48 /* [A-Za-z0-9_-], 1..47 chars */

enum pa_seg_kind {
  PA_SEG_CTL = 1,    /* pa_ctl + world snapshot + queues + health */
  PA_SEG_STATE = 2,  /* ring of pa_tick records (all robots, every tick) */
  PA_SEG_SCAN = 3,   /* ring of pa_scan records (one robot's scan) */
  PA_SEG_CAMERA = 4, /* ring of pa_frame records (one robot's image) */
  PA_SEG_MAP = 5,    /* pa_map_block + cells; created by pa-sim */
  PA_SEG_OBS = 6,    /* pa_obs_seg + a PAB1 block; created by pa-sim */
  PA_SEG_ATLAS = 7,  /* pa_atlas_seg + batched head cameras; by pa-render */
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
  PA_ERR_UNKNOWN_AGENT,
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
  uint32_t state_slots;    /* 0 = what 4 MiB holds, in [16, 64] ticks */
  uint32_t scan_slots;     /* 0 = max(64, max_robots * 5 / 4) */
  uint32_t camera_slots;   /* 8 frames */
  uint32_t cmd_capacity;   /* 1024 commands; replies get the same */
  uint32_t max_readers;    /* 8 blocking readers per ring */
} pa_stack_def;

/* pa_health.counters[] of each process, by index (monitoring, cumulative
 * since the process started unless said otherwise). */
#define PA_HEALTH_COUNTERS 6
enum pa_sim_ctr {
  PA_SIM_CTR_SCANS = 0,      /* scans published */
  PA_SIM_CTR_CMDS = 1,       /* commands applied */
  PA_SIM_CTR_BUMPS = 2,      /* robot-ticks limited by a collision */
  PA_SIM_CTR_TICK = 3,       /* current tick */
  PA_SIM_CTR_LATE_SCANS = 4, /* scans overlapped with the next ticks */
};
enum pa_netgw_ctr {
  PA_NETGW_CTR_STEPS = 0,       /* step commands sent */
  PA_NETGW_CTR_BUSY = 1,        /* commands refused or lost: queue full */
  PA_NETGW_CTR_LATE = 2,        /* replies nobody waited for any more */
  PA_NETGW_CTR_ODOM_FRAMES = 3, /* odometry datagrams sent */
  PA_NETGW_CTR_SCAN_FRAMES = 4, /* laser scan frames sent */
  PA_NETGW_CTR_CAM_FRAMES = 5,  /* camera frames sent */
};
/* pa-render and the launcher use no counters. */

/* Health and timings of one process; written by that process only (except
 * restarts/last_exit/hang_ms, written by the launcher). Monitoring data:
 * readers may see a field a tick old. */
typedef struct pa_health {
  int32_t pid;           /* 0 = not running */
  uint32_t ready;        /* 1 once serving */
  int64_t start_ns;      /* pa_now_ns() at start */
  int64_t heartbeat_ns;  /* pa_now_ns() at the last loop iteration; advances
                          * at least every 250 ms while the loop runs, idle
                          * or not (the launcher's watchdog reads it); set
                          * ahead before a step known to block (a map load) */
  uint32_t restarts;     /* launcher: times restarted */
  int32_t last_exit;     /* launcher: exit code, or -signal */
  uint64_t loops;        /* loop iterations (ticks, frames, events) */
  uint64_t overruns;     /* missed deadlines */
  int64_t period_p50_ns; /* loop period statistics over the last window */
  int64_t period_p99_ns;
  int64_t period_max_ns;
  double phase_ms[4];   /* per-phase cost [ms], meaning per process */
  uint64_t frames_sent; /* netgw: datagrams; render: frames */
  uint64_t bytes_sent;
  uint64_t frames_dropped; /* frames not sent/rendered (overload) */
  uint32_t clients;        /* netgw: connected TCP clients */
  uint32_t hang_ms;        /* launcher: watchdog limit on the heartbeat's age
                            * [ms], 0 = not watched (was reserved: same layout) */
  uint64_t counters[PA_HEALTH_COUNTERS]; /* per process: PA_*_CTR_* */
} pa_health;

/* Dynamic bodies (pa_robot_info.dynamics). */
enum pa_dynamics { PA_DYN_KINEMATIC = 0, PA_DYN_DYNAMIC = 1 };
#define PA_THRUSTERS_MAX 8
/* A named thruster of a dynamic robot: pushes along dir at (x, y), both in
 * the body frame, with value * max_force (value in [-1, 1]). */
typedef struct pa_thruster {
  char name[16];
  float x, y;      /* [m] body frame (x forward, y left) */
  float dir;       /* direction of a positive push [rad] from body x */
  float max_force; /* [N] */
} pa_thruster;

/* World snapshot: static properties of a robot (written by pa-sim). */
typedef struct pa_robot_info {
  char name[32];
  uint32_t active;            /* 0 = free slot */
  uint32_t gen;               /* bumped on spawn into this slot */
  uint32_t drive;             /* enum pa_drive */
  float radius;               /* footprint [m] */
  float height;               /* body height [m] */
  float head_height;          /* camera height above floor [m] */
  uint8_t colour[4];          /* RGBA */
  float max_v, max_vy, max_w; /* [m/s, m/s, rad/s] */
  float acc_v, dec_v;         /* linear speed-up / brake [m/s^2] */
  float acc_w, dec_w;         /* angular [rad/s^2] */
  float head_limit;           /* |head| <= head_limit [rad] */
  float max_head_rate;        /* [rad/s] */
  uint32_t laser_beams;
  float laser_range_min, laser_range_max; /* [m] */
  float laser_noise;                      /* Gaussian sigma [m] */
  uint16_t cam_width, cam_height;         /* [px] */
  float cam_fov;                          /* horizontal [rad] */
  double start_x, start_y, start_theta;   /* reset pose */
  float wheel_base;  /* differential: wheel separation [m] */
  uint32_t dynamics; /* enum pa_dynamics (was reserved: 0 = kinematic) */
  /* Dynamic bodies (dynamics PA_DYN_DYNAMIC): a free planar rigid body. */
  float mass;        /* [kg] */
  float inertia;     /* about the vertical axis [kg m^2] */
  float lin_damping; /* force = -lin_damping * velocity [N s/m] */
  float ang_damping; /* torque = -ang_damping * w [N m s/rad] */
  float max_force;   /* |force| bound of every input [N] */
  float max_torque;  /* |torque| bound [N m] */
  uint32_t thruster_count;
  float acc_vy; /* omni: sideways speed-up [m/s^2]; 0 = acc_v */
  pa_thruster thrusters[PA_THRUSTERS_MAX];
} pa_robot_info;

/* World snapshot: a static obstacle (written by pa-sim). */
typedef struct pa_obstacle_info {
  char name[32];
  uint32_t active, gen;
  uint32_t shape;        /* enum pa_shape */
  float height;          /* [m] */
  double x, y, theta;    /* centre pose [m, m, rad] */
  double size_x, size_y; /* box full extents [m] */
  double radius;         /* circle [m] */
  uint8_t colour[4];
  uint32_t agent; /* enum pa_agent: 0 = a static obstacle (was reserved) */
  uint32_t reserved;
  double vx, vy; /* [m/s] world frame: an agent's achieved velocity, else 0 */
} pa_obstacle_info;
/* Agents: obstacles that move on their own (pa_obstacle_info.agent). */
enum pa_agent {
  PA_AGENT_NONE = 0,       /* a static obstacle */
  PA_AGENT_CONSTANT = 1,   /* constant velocity, bouncing off what it meets */
  PA_AGENT_WAYPOINTS = 2,  /* a loop of waypoints at a speed */
  PA_AGENT_RANDOM = 3,     /* seeded random walk */
  PA_AGENT_PEDESTRIAN = 4, /* social force towards its waypoints */
  PA_AGENT_COUNT
};
#define PA_AGENT_WAYPOINTS_MAX 7

/* Camera demand and sequence per robot. subscribers is written by netgw
 * (and zeroed by a restarted netgw); seq by render. */
typedef struct pa_cam_demand {
  uint32_t subscribers; /* atomic */
  uint32_t seq;         /* last camera frame seq rendered for this robot */
} pa_cam_demand;

/* A port pa-netgw's core bound (or, kind PA_PORT_DEST, sends to), kept in
 * the control block so that a restarted pa-netgw binds exactly the same
 * ports: clients find the server where it was. Written only by pa-netgw. */
#define PA_PORTS_MAX 16
#define PA_PORT_NAME_MAX 24
enum { PA_PORT_FREE = 0, PA_PORT_TCP = 1, PA_PORT_UDP = 2, PA_PORT_DEST = 3 };
typedef struct pa_port_rec {
  char name[PA_PORT_NAME_MAX];     /* listener name ("tcp", "foxglove") */
  char frontend[PA_PORT_NAME_MAX]; /* the front-end that asked for it */
  uint32_t kind;                   /* PA_PORT_* (FREE = an unused slot) */
  uint32_t requested;              /* the flag's port when first bound */
  uint32_t port;                   /* the bound (or destination) port */
  uint32_t up;                     /* 1 while a pa-netgw has it bound */
} pa_port_rec;

/* The step lane: one same-host client steps robots through shared memory,
 * without pa-netgw (NavEnv(shm=True) and NavVectorEnv(shm=True),
 * docs/rl.md). The client holds an exclusive flock on the ctl segment's
 * file while it uses the lane, writes robot .. count (and with count >= 1
 * the actions at act_off), then req + 1, and posts the command queue's
 * semaphore (at wake_off from the segment base); pa-sim runs it between
 * queue commands, writes status .. msg, stores done = req and posts
 * reply_sem (at most one post pending).
 * count 0: one robot's STEP with PA_CMDF_DRIVE | PA_CMDF_OBS (v, w).
 * count >= 1: what pa-netgw queues for a step_batch of robots_range
 * [robot, count] with actions and observe "shm": the robots' drives as
 * SET_CMDS, then a STEP with PA_CMDF_OBS of those robots; the actions are
 * count x (v, w) float64 at act_off (room for max_robots), v and w unused.
 * Every field is checked by pa-sim as those commands' (a bad one changes
 * nothing). */
typedef struct pa_lane {
  uint32_t req;      /* client: bumped after a request is written */
  uint32_t done;     /* pa-sim: = req once its reply is written */
  uint32_t robot;    /* request: robot index (count >= 1: the first) */
  uint32_t ticks;    /* request: 1..PA_CMD_STEPS_MAX */
  double v, w;       /* request: robot-frame command [m/s, rad/s] (count 0) */
  int32_t status;    /* reply: pa_status */
  uint32_t count;    /* request: 0 one robot (v, w), else robots (act_off) */
  uint64_t tick;     /* reply: the tick after the step */
  uint64_t obs_seq;  /* reply: the observation block's seq; 0: none */
  uint64_t wake_off; /* pa-sim: the command queue's sem_t [bytes] */
  uint64_t act_off;  /* creator: double [max_robots][2] (v, w) [bytes],
                      * the segment's last array */
  uint32_t beams;    /* request: the block's scans as this many sectors
                      * (pa_obs_sectors; step_batch's data.beams); 0: as
                      * cast */
  uint32_t reserved;
  char msg[96]; /* reply: human text when status != PA_OK */
  sem_t reply_sem;
} pa_lane;

/* The control block, right after the ctl segment's header. Array offsets are
 * from the segment base. */
typedef struct pa_ctl {
  pa_stack_def def;
  /* rates the stack was started with (written by launcher or pa-sim) */
  double control_hz, scan_hz, feedback_hz, camera_hz;
  pa_health health[PA_PROC_COUNT];
  uint32_t tcp_port; /* netgw: bound port, 0 until listening */
  uint32_t tcp_port_requested;
  /* World snapshot seqlock: odd while pa-sim rewrites robots/obstacles. */
  uint64_t world_seq;
  uint32_t world_gen;      /* bumped on every world change */
  uint32_t map_gen;        /* bumped when the map segment is replaced */
  uint32_t robot_count;    /* highest active robot index + 1 */
  uint32_t obstacle_count; /* highest active obstacle index + 1 */
  uint64_t seed;
  /* Crash safety for the command being applied: pa-sim stores the queue
   * position + 1 before applying and 0 after replying and popping. */
  uint64_t cmd_inflight;
  sem_t render_wake;      /* netgw posts when camera demand changes */
  uint64_t off_robots;    /* pa_robot_info[max_robots] */
  uint64_t off_obstacles; /* pa_obstacle_info[max_obstacles] */
  uint64_t off_cam;       /* pa_cam_demand[max_robots] */
  uint64_t off_cmd;       /* pa_queue of pa_cmd */
  uint64_t off_reply;     /* pa_queue of pa_reply */
  uint64_t off_nav;       /* pa_nav_block */
  uint64_t off_visual;    /* pa_visual_block (pa_visual.h) */
  uint32_t http_port;     /* netgw: bound web port, 0 = none */
  uint32_t foxglove_port; /* netgw: bound Foxglove port, 0 = none */
  /* netgw polls the reply queue until then [pa_now_ns], 0 = not: pa-sim
   * skips the post (pa_queue_push_watched); a deadline, so a netgw that
   * dies polling leaves no lasting effect. */
  int64_t reply_watch_until;
  /* pa-netgw's ports by listener (written only by pa-netgw; seqlock: odd
   * while a record changes) */
  uint64_t ports_seq;
  pa_port_rec ports[PA_PORTS_MAX];
  uint32_t clients_seen; /* some client connected to this stack's pa-netgw */
  uint32_t reserved_ports;
  /* netgw: the last odom seq it sent + 1 (0 = none yet): a restarted netgw
   * never sends that seq again (the sim may be paused on its tick) */
  uint64_t odom_seq_sent;
  pa_lane lane;
} pa_ctl;

/* Navigation overlays: a client's planned path and waypoints for a robot,
 * drawn by the viewer (pa-netgw writes them, under the seqlock; readers
 * copy and retry). */
#define PA_NAV_OVERLAYS 64   /* robots with a drawing at once */
#define PA_NAV_PATH_MAX 1024 /* points of a path */
#define PA_NAV_WAYPOINTS_MAX 256
typedef struct pa_nav_overlay {
  uint32_t robot; /* robot index; UINT32_MAX = a free slot */
  uint32_t path_n, wp_n;
  uint32_t reserved;
  float path[PA_NAV_PATH_MAX][2]; /* world x, y [m] */
  float wp[PA_NAV_WAYPOINTS_MAX][2];
  /* OceanSim's set_waypoint (one goal) and set_pred_trajectory (a predicted
   * path, drawn unlike the plan) */
  uint32_t goal_n, pred_n; /* goal_n 0 or 1 */
  float goal[2];
  float pred[PA_NAV_PATH_MAX][2];
} pa_nav_overlay;
typedef struct pa_nav_block {
  uint64_t seq; /* odd while being written */
  uint32_t gen; /* bumped on every change */
  uint32_t reserved;
  pa_nav_overlay ov[PA_NAV_OVERLAYS];
} pa_nav_block;

/* Dynamic state of one robot at one tick: everything pa-sim needs to resume
 * after a crash. */
typedef struct pa_robot_state {
  uint32_t id;                       /* robot index */
  uint32_t gen;                      /* pa_robot_info.gen */
  uint32_t flags;                    /* PA_RS_* */
  uint32_t scan_seq;                 /* seq of the robot's last scan */
  double x, y, theta;                /* ground truth [m, m, rad] */
  double odom_x, odom_y, odom_theta; /* wheel-odometry estimate */
  double v, vy, w;  /* achieved, robot frame [m/s, m/s, rad/s] */
  double head;      /* pan angle relative to heading [rad] */
  double head_rate; /* achieved [rad/s] */
  double cmd_v, cmd_vy, cmd_w, cmd_head; /* held command */
  uint32_t cmd_frame; /* PA_FRAME_ROBOT / PA_FRAME_WORLD (omni) */
  uint32_t reserved;
  uint64_t rng; /* noise generator state */
} pa_robot_state;

enum {
  PA_RS_ACTIVE = 1u << 0,
  PA_RS_BUMPED = 1u << 1,       /* a collision limited the last tick's motion */
  PA_RS_BALL_CONTACT = 1u << 2, /* SSL: the ball touched its dribbler bar */
};
enum { PA_FRAME_ROBOT = 0, PA_FRAME_WORLD = 1 };

/* State ring record: one tick, followed by robot_count pa_robot_state. */
typedef struct pa_tick {
  uint64_t tick;   /* ticks since the simulation started */
  double sim_time; /* [s] */
  int64_t wall_ns; /* pa_now_ns() when written */
  uint32_t robot_count;
  uint32_t flags; /* PA_TICK_* */
  double speed;   /* time scale; 0 = as fast as possible */
  uint32_t world_gen;
  uint32_t scan_phase; /* pa-sim's scan_tick0 % ticks_per_scan (resume) */
  uint32_t ssl;        /* SSL field division 'A' / 'B'; 0 = no SSL field */
  int32_t ball_holder; /* SSL: robot holding the ball on its dribbler, -1 */
  double ball[6];      /* SSL: x, y, z, vx, vy, vz [m, m/s]; z = height of
                        * its bottom; ball_holder -2 = no ball */
  /* SSL: [m/s] the ball slides while faster than this; 0 = rolling */
  double ball_v_switch;
  /* pa_robot_state robots[robot_count]; */
} pa_tick;
enum { PA_TICK_PAUSED = 1u << 0 };

/* Scan ring record: one robot's scan, followed by count floats [m]. */
typedef struct pa_scan {
  uint64_t tick;
  double sim_time; /* [s] */
  int64_t wall_ns;
  uint32_t robot;
  uint32_t seq;       /* per robot, +1 per scan, continues on restart */
  double x, y, theta; /* sensor pose in the world */
  float angle_min, angle_increment; /* [rad] */
  float range_min, range_max;       /* [m] */
  uint32_t count;
  uint32_t reserved;
  /* float ranges[count]; */
} pa_scan;

/* Camera ring record: one image, followed by size bytes RGB888, rows top to
 * bottom. */
typedef struct pa_frame {
  uint64_t tick; /* tick of the pose it was rendered from */
  double sim_time;
  int64_t wall_ns;
  uint32_t robot;
  uint32_t seq;             /* per robot, +1 per image, continues on restart */
  double x, y, theta, head; /* camera pose rendered from */
  uint16_t width, height;   /* [px] */
  uint32_t size;            /* width * height * 3 */
  /* uint8_t rgb[size]; */
} pa_frame;

/* Commands (netgw -> pa-sim). Each op's arguments are the pa_cmd member
 * named after it (drive, step, pose, ...); everything else is zero. Each
 * op's results are the pa_reply member named after it. */
enum pa_op {
  PA_OP_NONE = 0,
  PA_OP_SET_CMD,  /* robot; drive; replies pose */
  PA_OP_STOP,     /* robot; replies pose */
  PA_OP_TELEPORT, /* robot; pose; replies pose */
  PA_OP_PAUSE,
  PA_OP_RESUME,
  PA_OP_STEP, /* step (ticks >= 1; with PA_CMDF_DRIVE its drive is applied
                 to robot first, robot frame) */
  PA_OP_RESET,
  PA_OP_SPEED,              /* speed; replies speed */
  PA_OP_SPAWN_ROBOT,        /* name; spawn_robot; replies pose */
  PA_OP_REMOVE_ROBOT,       /* robot; replies obj */
  PA_OP_SPAWN_OBSTACLE,     /* name; spawn_obstacle; replies obj */
  PA_OP_REMOVE_OBSTACLE,    /* name; replies obj */
  PA_OP_SYNC,               /* no-op; replies with the current tick */
  PA_OP_SET_PROPERTY,       /* robot, or the obstacle `name` when robot is
                               UINT32_MAX; prop; replies prop (values applied) */
  PA_OP_SAVE_SNAPSHOT,      /* name; replies snapshot */
  PA_OP_LOAD_SNAPSHOT,      /* name; replies snapshot */
  PA_OP_SET_MAP,            /* path = a map_server YAML, or "" = the built-in
                               default map; replies map */
  PA_OP_GENERATE_MAP,       /* gen_map; replies map */
  PA_OP_SET_SCENARIO,       /* path = a world file, "" = the default world; the
                               world replaces robots, obstacles and map; replies
                               map */
  PA_OP_EXPORT_DATASET,     /* name; dataset; replies dataset */
  PA_OP_SAVE_SNAPSHOT_JSON, /* path (under --data_dir); replies snapshot */
  PA_OP_LOAD_SNAPSHOT_JSON, /* path (under --data_dir); replies snapshot */
  PA_OP_SAVE_WORLD,         /* path (a world .yaml under --data_dir); replies
                               snapshot (robots, obstacles, tick) */
  PA_OP_SSL_ROBOT,          /* robot; ssl_robot (an SSL RobotCommand); replies
                               ssl */
  PA_OP_TELEPORT_BALL,      /* ball; replies ssl */
  PA_OP_GET_BALL,           /* replies ssl (robot: its contact and kicks) */
  PA_OP_TELEPORT_MOVING,    /* robot; moving (pose + world velocity); replies
                               pose */
  PA_OP_SSL_SPECS,          /* robot; ssl_specs (RobotSpecs but radius, height);
                               replies ssl */
  PA_OP_SET_FORCE,          /* robot (dynamic); force; replies pose */
  PA_OP_SET_THRUST,         /* robot (dynamic); thrust; replies pose */
  PA_OP_SPAWN_AGENT,        /* name; agent; path = waypoints "x,y x,y ..."
                               (PA_AGENT_WAYPOINTS_MAX); replies obj */
  PA_OP_MOVE_AGENT,         /* name; agent (PA_CMDF_AGENT_* say which parts);
                               path = new waypoints; replies obj */
  PA_OP_REMOVE_AGENT,       /* name; replies obj */
  PA_OP_CLEAR_AGENTS,       /* replies obj (id = agents removed) */
  PA_OP_SET_CMDS,           /* count drives (robot frame), one robot each:
                               as count SET_CMDs; replies nothing more */
  PA_OP_COUNT
};
#define PA_CMD_PATH_MAX 256 /* pa_cmd.path, with its NUL */

/* Settable properties (PA_OP_SET_PROPERTY). Robots: all but SIZE;
 * obstacles: HEIGHT, COLOUR, RADIUS (circles), SIZE (boxes). Each one's
 * range (per kind) is its row of maps/pa_props.h. */
enum pa_prop {
  PA_PROP_NONE = 0,
  PA_PROP_MAX_V,
  PA_PROP_MAX_VY,
  PA_PROP_MAX_W,
  PA_PROP_ACC_V,
  PA_PROP_DEC_V,
  PA_PROP_ACC_W,
  PA_PROP_DEC_W,
  PA_PROP_HEAD_LIMIT,
  PA_PROP_MAX_HEAD_RATE,
  PA_PROP_LASER_BEAMS,     /* also at most the instance's max_beams */
  PA_PROP_LASER_RANGE_MIN, /* also below laser_range_max */
  PA_PROP_LASER_RANGE_MAX, /* also above laser_range_min */
  PA_PROP_LASER_NOISE,
  PA_PROP_RADIUS, /* no overlap with walls or bodies after the change */
  PA_PROP_HEIGHT,
  PA_PROP_HEAD_HEIGHT,
  PA_PROP_COLOUR, /* v = r, g, b, alpha */
  PA_PROP_SIZE,   /* boxes: v = size_x, size_y */
  PA_PROP_WHEEL_BASE,
  PA_PROP_DYNAMICS, /* v = enum pa_dynamics */
  PA_PROP_MASS,
  PA_PROP_INERTIA,
  PA_PROP_LINEAR_DAMPING,
  PA_PROP_ANGULAR_DAMPING,
  PA_PROP_MAX_FORCE,
  PA_PROP_MAX_TORQUE,
  PA_PROP_ACC_VY,
  PA_PROP_COUNT
};
enum { PA_CMDF_DRIVE = 1u << 0, PA_CMDF_NO_REPLY = 1u << 1 };
/* STEP: afterwards pa-sim writes robots [obs_first, +obs_count)'s states and
 * newest scans into the observation segment (its reply's step.obs_seq). */
enum { PA_CMDF_OBS = 1u << 5 };
/* SAVE_SNAPSHOT_JSON, SAVE_WORLD, EXPORT_DATASET: replace files that exist
 * (the request's overwrite: true); without it they are refused by name. */
enum { PA_CMDF_OVERWRITE = 1u << 6 };
enum { /* MOVE_AGENT: what changes */
       PA_CMDF_AGENT_POSE = 1u << 2,
       PA_CMDF_AGENT_GOAL = 1u << 3,  /* path: waypoints (one = a goal) */
       PA_CMDF_AGENT_SPEED = 1u << 4, /* speed (and heading = theta) */
};

/* ---- per-op arguments (pa_cmd) */
typedef struct pa_cmd_drive { /* SET_CMD; STEP with PA_CMDF_DRIVE */
  double v, vy, w;            /* [m/s, m/s, rad/s] */
  double head_rate;           /* [rad/s] */
  uint32_t frame;             /* PA_FRAME_*; world: omni SET_CMD only */
  uint32_t reserved;
} pa_cmd_drive;
typedef struct pa_cmd_step {     /* STEP */
  pa_cmd_drive drive;            /* with PA_CMDF_DRIVE (robot frame) */
  uint32_t ticks;                /* 1..PA_CMD_STEPS_MAX */
  uint32_t obs_beams;            /* with PA_CMDF_OBS: each scan as this many
                                  * sectors (pa_obs_sectors); 0: as cast */
  uint32_t obs_first, obs_count; /* with PA_CMDF_OBS: the robots observed */
} pa_cmd_step;
typedef struct pa_cmd_pose { /* TELEPORT */
  double x, y, theta;        /* [m, m, rad] */
} pa_cmd_pose;
typedef struct pa_cmd_speed { /* SPEED */
  double factor;              /* 0 = as fast as possible */
} pa_cmd_speed;
typedef struct pa_cmd_spawn_robot {
  double x, y, theta; /* start pose */
  double radius;      /* [m], 0 = the default */
  uint32_t drive;     /* enum pa_drive */
  uint32_t dynamics;  /* enum pa_dynamics (was reserved: 0 = kinematic) */
} pa_cmd_spawn_robot;
typedef struct pa_cmd_spawn_obstacle {
  double x, y, theta;    /* centre pose */
  double size_x, size_y; /* boxes: full extents [m] */
  double radius;         /* circles [m] */
  double height;         /* [m], 0 = 0.5 m */
  uint32_t shape;        /* enum pa_shape */
  uint32_t reserved;
} pa_cmd_spawn_obstacle;
typedef struct pa_cmd_prop { /* SET_PROPERTY */
  uint32_t prop;             /* enum pa_prop */
  uint32_t reserved;
  double v[4]; /* the value; colour: r, g, b, a; size: x, y */
} pa_cmd_prop;
typedef struct pa_cmd_gen_map { /* GENERATE_MAP (pa_map_generate) */
  double width, height;         /* [m] */
  double resolution;            /* [m/cell] */
  double seed;                  /* whole, up to 2^53 */
  double rooms_x, rooms_y;      /* rooms across, along */
  double clutter;               /* boxes per room */
  double scenario; /* 0: the building above; k: built-in scenario k - 1
                      (pa_scenario_generate) with seed, the rest unused */
} pa_cmd_gen_map;
typedef struct pa_cmd_dataset { /* EXPORT_DATASET */
  uint32_t ticks;               /* to record from the next one */
  /* path = export_dir (under --data_dir), or "" and name (under
   * --dataset_dir); with PA_DATASET_IMAGES, robot = the one camera
   * (UINT32_MAX: every robot's) */
  uint32_t flags; /* PA_DATASET_* */
} pa_cmd_dataset;
enum pa_force_mode {
  PA_FORCE_HOLD = 0, /* replaces the held force and torque (until replaced) */
  PA_FORCE_PULSE = 1 /* added on top for `seconds` (0 = one tick) */
};
typedef struct pa_cmd_force { /* SET_FORCE */
  double fx, fy;              /* [N] in `frame` (robot: x forward, y left) */
  double tz;                  /* [N m] counter-clockwise */
  double px, py;              /* PULSE: the point of the body it acts at [m],
                                 body frame (adds px * fy - py * fx) */
  double seconds;             /* PULSE: how long [s] */
  uint32_t frame;             /* PA_FRAME_ROBOT / PA_FRAME_WORLD */
  uint32_t mode;              /* enum pa_force_mode */
} pa_cmd_force;
typedef struct pa_cmd_agent { /* SPAWN_AGENT, MOVE_AGENT */
  double x, y, theta;         /* pose; constant velocity heads along theta */
  double radius;              /* circles [m] */
  double size_x, size_y;      /* boxes [m] */
  double speed;               /* [m/s] */
  uint32_t shape;             /* enum pa_shape */
  uint32_t behaviour;         /* enum pa_agent (not NONE) */
} pa_cmd_agent;
typedef struct pa_cmd_thrust {    /* SET_THRUST: held thruster values */
  double value[PA_THRUSTERS_MAX]; /* [-1, 1] of each one's max_force, by
                                     index; NaN = keep its value */
} pa_cmd_thrust;

/* SSL: one robot's command (RobotCommand): a move (PA_SSL_MOVE_*), and
 * the kicker / dribbler when their PA_SSL_HAS_* bit is set. */
enum {
  PA_SSL_MOVE_NONE = 0,
  PA_SSL_MOVE_WHEELS, /* m = front_right, back_right, back_left, front_left
                         [m/s] */
  PA_SSL_MOVE_LOCAL,  /* m = forward, left [m/s], angular [rad/s] */
  PA_SSL_MOVE_GLOBAL, /* m = x, y [m/s], angular [rad/s] */
};
enum {
  PA_SSL_HAS_KICK = 1u << 0,
  PA_SSL_HAS_DRIBBLER = 1u << 1,
  PA_SSL_HAS_TIMEOUT =
      1u << 2, /* a team port's: lapses (--ssl_command_timeout_ms) */
};
typedef struct pa_cmd_ssl_robot { /* SSL_ROBOT */
  uint32_t move;                  /* PA_SSL_MOVE_* */
  uint32_t has;                   /* PA_SSL_HAS_* */
  double m[4];
  double kick_speed;   /* [m/s] absolute */
  double kick_angle;   /* [deg] 0 = straight, > 0 = chip */
  double dribbler_rpm; /* [rpm] > 0 = on */
} pa_cmd_ssl_robot;
typedef struct pa_cmd_ball { /* TELEPORT_BALL */
  double x, y, z;            /* [m] */
  double vx, vy, vz;         /* [m/s] */
  uint32_t roll;             /* 1 = already rolling */
  uint32_t present;          /* 0 = take the ball off the field */
} pa_cmd_ball;
/* SSL_SPECS: the fields whose PA_SSL_SPEC_* bit is set. */
enum {
  PA_SSL_SPEC_MASS = 1u << 0,
  PA_SSL_SPEC_MAX_KICK = 1u << 1,
  PA_SSL_SPEC_MAX_CHIP = 1u << 2,
  PA_SSL_SPEC_C2D = 1u << 3,
  PA_SSL_SPEC_LIMITS = 1u << 4, /* lim[i] when bit (8 + i) is set too */
  PA_SSL_SPEC_WHEELS = 1u << 5,
  PA_SSL_SPEC_DRIBBLER_WIDTH = 1u << 6,
};
typedef struct pa_cmd_ssl_specs { /* SSL_SPECS */
  uint32_t has;                   /* PA_SSL_SPEC_*; bits 8..13: lim[0..5] */
  float mass;                     /* [kg] */
  float max_kick, max_chip;       /* [m/s], 0 = unlimited */
  float c2d;                      /* [m] centre to dribbler */
  float lim[6];         /* acc up, acc up angular, brake, brake angular [m/s^2,
                           rad/s^2], v max [m/s], w max [rad/s]; 0 = unlimited */
  float wheel[4];       /* [rad] front_right, back_right, back_left,
                           front_left, clockwise from forward */
  float dribbler_width; /* [m] */
} pa_cmd_ssl_specs;
typedef struct pa_cmd_moving { /* TELEPORT_MOVING */
  double x, y, theta;          /* [m, m, rad] */
  double vx, vy, w;            /* world frame [m/s, m/s, rad/s] */
} pa_cmd_moving;
enum {
  PA_DATASET_IMAGES = 1u << 0, /* render_image: head-camera PNGs */
  PA_DATASET_PACK = 1u << 1,   /* pack_dataset: <dir>.tar.gz beside it */
  PA_DATASET_WAIT = 1u << 2,   /* reply when written (else at once) */
};
#define PA_DATASET_IMAGES_MAX 10000u /* camera images of one export */
/* The files every export writes, in order (then frames.csv + images/ with
 * PA_DATASET_IMAGES, and dataset.json last): pa-sim writes them, pa-netgw
 * names them in the reply. */
#define PA_DATASET_FIXED_FILES                                                 \
  "map.yaml", "map.png", "robots.csv", "poses.csv", "scans.csv", "agents.csv", \
      "points.csv", "points.ply"

#define PA_CMD_STEPS_MAX 1000000u /* ticks of one STEP */
#define PA_CMD_SPEED_LIMIT 1e6    /* |velocity| of a drive, any unit */

typedef struct pa_cmd_drive_of { /* SET_CMDS: one robot's velocity */
  double v, vy, w;               /* [m/s, m/s, rad/s], robot frame */
  uint32_t robot;                /* index */
  uint32_t reserved;
} pa_cmd_drive_of;
/* What the argument, name and path areas hold together: a step_batch's
 * 1,000 velocities are 91 commands, not 1,000. */
#define PA_CMD_DRIVES_MAX 11

typedef struct pa_cmd {
  uint64_t client_id;  /* netgw connection id */
  uint64_t request_id; /* netgw-assigned, echoed in the reply */
  uint32_t op;         /* enum pa_op */
  uint32_t flags;      /* PA_CMDF_* */
  uint32_t robot;      /* robot index */
  uint32_t count;      /* SET_CMDS: entries of drives (<= PA_CMD_DRIVES_MAX) */
  union {
    struct {
      union { /* the member of op (see enum pa_op) */
        pa_cmd_drive drive;
        pa_cmd_step step;
        pa_cmd_pose pose;
        pa_cmd_speed speed;
        pa_cmd_spawn_robot spawn_robot;
        pa_cmd_spawn_obstacle spawn_obstacle;
        pa_cmd_prop prop;
        pa_cmd_gen_map gen_map;
        pa_cmd_dataset dataset;
        pa_cmd_ssl_robot ssl_robot;
        pa_cmd_ball ball;
        pa_cmd_moving moving;
        pa_cmd_ssl_specs ssl_specs;
        pa_cmd_force force;
        pa_cmd_thrust thrust;
        pa_cmd_agent agent;
        uint8_t args_raw[64]; /* the size of the area: fixed */
      };
      char name[32];              /* op specific name */
      char path[PA_CMD_PATH_MAX]; /* op specific file path */
    };
    pa_cmd_drive_of drives[PA_CMD_DRIVES_MAX]; /* SET_CMDS, over all three */
  };
} pa_cmd;

/* ---- per-op results (pa_reply) */
typedef struct pa_reply_pose { /* robot ops: the robot after the command */
  double x, y, theta;          /* [m, m, rad] */
  double v, vy, w;             /* achieved [m/s, m/s, rad/s] */
  double head;                 /* [rad] */
  uint32_t robot;              /* index */
  uint32_t reserved;
} pa_reply_pose;
typedef struct pa_reply_step { /* STEP */
  pa_reply_pose pose;          /* its robot's, as a robot op's */
  uint64_t obs_seq; /* with PA_CMDF_OBS: the block's pa_obs_seg.seq; 0: none */
} pa_reply_step;
typedef struct pa_reply_obj { /* REMOVE_*, SPAWN_OBSTACLE */
  uint32_t id;                /* robot or obstacle index */
} pa_reply_obj;
typedef struct pa_reply_speed {
  double factor; /* applied */
} pa_reply_speed;
typedef struct pa_reply_prop { /* SET_PROPERTY */
  double v[4];                 /* the value(s) applied, as pa_cmd_prop */
  uint32_t id;                 /* robot or obstacle index */
} pa_reply_prop;
typedef struct pa_reply_snapshot { /* SAVE_SNAPSHOT, LOAD_SNAPSHOT */
  uint64_t tick;                   /* the saved world's */
  double sim_time;                 /* [s] */
  uint32_t robots, obstacles;
} pa_reply_snapshot;
typedef struct pa_reply_map { /* SET_MAP, GENERATE_MAP, SET_SCENARIO */
  uint32_t width, height;     /* [cells] */
  double resolution;          /* [m/cell] */
  double origin_x, origin_y;  /* [m] */
  uint32_t moved;             /* robots moved off walls */
  uint32_t robots, obstacles; /* after the change */
} pa_reply_map;
typedef struct pa_reply_dataset { /* EXPORT_DATASET */
  uint64_t first_tick, last_tick;
  /* with PA_DATASET_WAIT (else 0): what was written */
  uint64_t rows;        /* poses.csv rows */
  uint32_t scans;       /* scans.csv rows */
  uint32_t images;      /* images/000000.png .. (images - 1) */
  uint32_t images_lost; /* camera frames missed (ring lapped) */
  uint32_t flags;       /* PA_DATASET_* done (PACK: archive written) */
} pa_reply_dataset;

typedef struct pa_reply_ssl { /* SSL_ROBOT, TELEPORT_BALL, GET_BALL */
  double ball[6];             /* x, y, z, vx, vy, vz [m, m/s] */
  int32_t holder;             /* robot holding it, -1; -2 = no ball */
  uint32_t contact;           /* the robot's ball contact (robot ops) */
  uint32_t kicks;             /* the robot's kicks fired so far */
  uint32_t division;          /* 'A' / 'B' */
  /* TELEPORT_BALL: 1 + the robot the asked position lay inside (the ball
   * was placed just outside it; msg says where), 0 = placed as asked */
  uint32_t moved_from;
} pa_reply_ssl;

typedef struct pa_reply {
  uint64_t client_id;
  uint64_t request_id;
  uint32_t op;
  int32_t status;  /* pa_status */
  uint64_t tick;   /* tick after the command took effect */
  double sim_time; /* [s] */
  union {          /* the member of op (see enum pa_op) */
    pa_reply_pose pose;
    pa_reply_step step;
    pa_reply_obj obj;
    pa_reply_speed speed;
    pa_reply_prop prop;
    pa_reply_snapshot snapshot;
    pa_reply_map map;
    pa_reply_dataset dataset;
    pa_reply_ssl ssl;
    uint8_t res_raw[72]; /* the size of the area: fixed */
  };
  char msg[96]; /* human text when status != PA_OK */
} pa_reply;

/* The queues' record sizes are part of the layout version. */
_Static_assert(sizeof(pa_cmd) == 384, "pa_cmd grew: bump the layout");
_Static_assert(sizeof(((pa_cmd *)0)->drives) <=
                   sizeof(pa_cmd) - offsetof(pa_cmd, args_raw),
               "SET_CMDS' drives must fit the areas they overlay");
_Static_assert(sizeof(pa_reply) == 208, "pa_reply grew: bump the layout");

/* The one check of a drive (SET_CMD, a STEP's drive): netgw before it
 * queues one (a drive may take no reply) and pa-sim as it applies it.
 * NULL when fine, else what is wrong. */
static inline const char *pa_cmd_drive_error(const pa_cmd_drive *d) {
  const double x[4] = {d->v, d->vy, d->w, d->head_rate};
  for (int i = 0; i < 4; i++)
    if (!(x[i] >= -PA_CMD_SPEED_LIMIT && x[i] <= PA_CMD_SPEED_LIMIT))
      return "velocities must be finite numbers within 1e6";
  if (d->frame != PA_FRAME_ROBOT && d->frame != PA_FRAME_WORLD)
    return "unknown velocity frame";
  return NULL;
}

/* Map segment body: grid in ROS nav_msgs/OccupancyGrid values (-1 unknown,
 * 0..100), row 0 = south edge, column 0 = west edge. */
typedef struct pa_map_block {
  uint32_t width, height;                /* [cells] */
  double resolution;                     /* [m/cell] */
  double origin_x, origin_y, origin_yaw; /* world pose of cell (0,0)'s corner */
  uint32_t gen;         /* equals pa_ctl.map_gen when current */
  int32_t occupied_min; /* a cell >= this blocks (map_server's threshold
                           as loaded; 100 in trinary maps; 0 = 100) */
  uint64_t off_cells;   /* from segment base; int8_t[width * height] */
} pa_map_block;

/* A map block's blocking threshold (0 from an older writer = 100, as a
 * trinary map's occupied cells). */
static inline int8_t pa_map_block_occupied_min(const pa_map_block *m) {
  return m->occupied_min > 0 ? (int8_t)m->occupied_min : (int8_t)100;
}

/* The PAB1 block: step_batch's binary reply and the observation segment's
 * body (docs/protocol-notes.md). "PAB1", then uint32 robots n, beams,
 * fields (PA_OBS_FIELDS); n rows of `fields` doubles (enum pa_obs_field);
 * then n x beams float32 ranges, NaN after a shorter scan. */
#define PA_OBS_MAGIC "PAB1"
#define PA_OBS_HEADER 16u
enum pa_obs_field {
  PA_OBS_X,
  PA_OBS_Y,
  PA_OBS_THETA,
  PA_OBS_V,
  PA_OBS_VY,
  PA_OBS_W,
  PA_OBS_ODOM_X,
  PA_OBS_ODOM_Y,
  PA_OBS_ODOM_THETA,
  PA_OBS_HEAD,
  PA_OBS_BUMPED,
  PA_OBS_SCAN_SEQ,
  PA_OBS_SCAN_TICK,
  PA_OBS_ANGLE_MIN,
  PA_OBS_ANGLE_INC,
  PA_OBS_RANGE_MAX,
  PA_OBS_FIELDS
};

/* One robot's row of a PAB1 block: NaN where nothing is known (no state;
 * no scan yet: range_max is then the robot's laser's). */
static inline void pa_obs_row(double *f, const pa_robot_state *rs,
                              const pa_scan *s, double range_max) {
  for (int i = 0; i < PA_OBS_FIELDS; i++)
    f[i] = __builtin_nan("");
  if (rs) {
    f[PA_OBS_X] = rs->x;
    f[PA_OBS_Y] = rs->y;
    f[PA_OBS_THETA] = rs->theta;
    f[PA_OBS_V] = rs->v;
    f[PA_OBS_VY] = rs->vy;
    f[PA_OBS_W] = rs->w;
    f[PA_OBS_ODOM_X] = rs->odom_x;
    f[PA_OBS_ODOM_Y] = rs->odom_y;
    f[PA_OBS_ODOM_THETA] = rs->odom_theta;
    f[PA_OBS_HEAD] = rs->head;
    f[PA_OBS_BUMPED] = (rs->flags & PA_RS_BUMPED) ? 1 : 0;
  }
  f[PA_OBS_RANGE_MAX] = range_max;
  if (s) {
    f[PA_OBS_SCAN_SEQ] = s->seq;
    f[PA_OBS_SCAN_TICK] = (double)s->tick;
    f[PA_OBS_ANGLE_MIN] = s->angle_min;
    f[PA_OBS_ANGLE_INC] = s->angle_increment;
    f[PA_OBS_RANGE_MAX] = s->range_max;
  }
}

/* The angle step of a scan of n beams, each inc apart, as `beams` sectors:
 * the sectors' mean width (the first sector starts at angle_min). */
static inline double pa_obs_sector_inc(double inc, uint32_t n, uint32_t beams) {
  return beams && n ? inc * ((double)n / beams) : inc;
}

/* Observation segment body: the block of the last STEP with PA_CMDF_OBS,
 * written by pa-sim (its threads) while the step's data is in its caches,
 * so that a same-host client reads one hot block instead of gathering
 * 1,000 cold ring slots. A reader copies the block, then checks that seq
 * is still the one its STEP's reply named (another client's STEP may
 * have replaced it: it then reads the rings). */
typedef struct pa_obs_seg {
  uint64_t seq;          /* odd while a block is written; +2 per block */
  uint64_t tick;         /* the tick observed */
  uint64_t off_block;    /* from the segment's base: the PAB1 block, right
                          * after this header */
  uint64_t bytes;        /* the block's size */
  uint64_t capacity;     /* bytes from off_block to the segment's end */
  uint32_t first, count; /* robots [first, first + count) */
  uint64_t reserved[2];
} pa_obs_seg;
_Static_assert(sizeof(pa_obs_seg) == 64, "pa_obs_seg is one line");

/* Atlas segment (created by pa-render): the batched head cameras of
 * camera_batch (docs/PROTOCOL.md). pa-netgw writes a request under req_seq
 * (odd while written, +2 per request) and posts render_wake; pa-render
 * draws robots [first, first + count) at width x height from the newest
 * tick >= min_tick into frames (count x height x width x 3 RGB, row 0 at
 * the top: a numpy (count, height, width, 3) uint8 array) under seq (odd
 * while written), then stores done = the req_seq it answered, then adds 1
 * to wake and wakes its futex waiters. A reader waits for done == its
 * request's req_seq (sleeping on wake between answers), copies, and checks
 * seq and done again. */
#define PA_ATLAS_MAX_BYTES (32u << 20) /* frames of one request */
#define PA_ATLAS_MAX_SIDE 1024u        /* a tile's width or height [px] */
#define PA_ATLAS_MAX_TILES 4096u       /* robots of one request */
#define PA_ATLAS_OFF_FRAMES 4096u      /* from the segment's base */
enum { PA_ATLAS_OK = 0, PA_ATLAS_BAD_REQUEST = 1, PA_ATLAS_GL_ERROR = 2 };
typedef struct pa_atlas_seg {
  /* pa-netgw: the request */
  uint64_t req_seq;
  uint64_t min_tick;
  uint32_t first, count;  /* robots */
  uint32_t width, height; /* a tile [px] */
  uint64_t reserved0[4];
  /* pa-render: the answer */
  uint64_t seq;       /* odd while frames are written */
  uint64_t done;      /* the req_seq the frames answer */
  uint64_t tick;      /* the state they show */
  double sim_time;    /* [s] of that tick */
  uint32_t status;    /* PA_ATLAS_* */
  int32_t render_pid; /* pa-render serving them (0 = none) */
  uint32_t d_first, d_count, d_width, d_height; /* what frames hold */
  uint64_t off_frames; /* from the segment's base: PA_ATLAS_OFF_FRAMES */
  uint64_t capacity;   /* bytes of frames: PA_ATLAS_MAX_BYTES */
  uint64_t render_ns;  /* cost of the last answer (monitoring) */
  uint64_t answered;   /* requests answered (monitoring) */
  uint32_t wake;       /* +1 once an answer is complete (seq even, done
                        * set): a futex word; pa-render wakes every waiter
                        * (FUTEX_WAKE, not private: the segment is shared) */
  uint32_t reserved2;
  uint64_t reserved1[4];
} pa_atlas_seg;
_Static_assert(sizeof(pa_atlas_seg) == 192, "pa_atlas_seg: three lines");

#ifdef __cplusplus
}
#endif
#endif /* PA_LAYOUT_H */
