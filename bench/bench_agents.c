/* bench_agents.c - the cost of agents: real-time factor of a 40 m x 40 m
 * room with 10 robots (driven at random, scanning at 10 Hz) and 0, 100 and
 * 1000 agents (pedestrians walking between random waypoints, or another
 * behaviour), in-process (pa_sim_step, one thread), against the same world
 * without agents in the same run.
 *
 *   bench-agents [sim_seconds (default 10)] [--behaviour constant|waypoints|
 *                random|pedestrian] [--agents N,N,...]
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pa_map.h"
#include "pa_shm.h"
#include "pa_sim.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *err) {
  fprintf(stderr, "bench-agents: %s: %s\n", what, err);
  exit(1);
}

/* A 40 m x 40 m room of 0.05 m cells, walls all round. */
static void room(pa_grid *g) {
  memset(g, 0, sizeof *g);
  g->width = g->height = 800;
  g->resolution = 0.05;
  g->occupied_min = 100;
  g->cells = calloc((size_t)800 * 800, 1);
  if (!g->cells)
    die("grid", "out of memory");
  for (int i = 0; i < 800; i++) {
    g->cells[i] = g->cells[(size_t)799 * 800 + i] = 100;
    g->cells[(size_t)i * 800] = g->cells[(size_t)i * 800 + 799] = 100;
  }
}

/* Seconds of wall time per simulated second. */
static double run(const pa_grid *g, uint32_t agents, uint32_t behaviour,
                  double sim_s, uint32_t *placed) {
  pa_world w;
  memset(&w, 0, sizeof w);
  w.unknown_blocks = true;
  pa_robot_def rd[10];
  for (int i = 0; i < 10; i++) {
    rd[i] = pa_robot_def_default();
    snprintf(rd[i].name, sizeof rd[i].name, "r%d", i);
    rd[i].x = 2 + 3.5 * i;
    rd[i].y = 1.0;
  }
  w.robots = rd;
  w.robot_count = 10;
  pa_sim_def d = pa_sim_def_default();
  d.seed = 1;
  d.threads = 1;
  d.max_obstacles = 2048;
  char err[256];
  pa_sim_model m;
  pa_sim_state s;
  if (pa_sim_model_init(&m, &d, &w, g, err, sizeof err) != 0 ||
      pa_sim_state_init(&m, &s, err, sizeof err) != 0)
    die("world", err);
  uint64_t rng = 9;
  *placed = 0;
  for (uint32_t tries = 0; *placed < agents && tries < 100 * agents; tries++) {
    pa_cmd c;
    pa_reply r;
    memset(&c, 0, sizeof c);
    c.op = PA_OP_SPAWN_AGENT;
    size_t n = 0;
    for (int k = 0; k < 3; k++)
      n += (size_t)snprintf(c.path + n, sizeof c.path - n, "%.3f,%.3f ",
                            1 + 38 * pa_sim_rng_uniform(&rng),
                            2.5 + 36.5 * pa_sim_rng_uniform(&rng));
    c.agent = (pa_cmd_agent){1 + 38 * pa_sim_rng_uniform(&rng),
                             2.5 + 36.5 * pa_sim_rng_uniform(&rng),
                             6.28 * pa_sim_rng_uniform(&rng),
                             0.25,
                             0,
                             0,
                             0.5 + pa_sim_rng_uniform(&rng),
                             PA_SHAPE_CIRCLE,
                             behaviour};
    if (pa_sim_apply(&m, &s, &c, &r) == PA_OK)
      (*placed)++;
  }
  uint32_t ticks = (uint32_t)(sim_s * d.control_hz);
  double t0 = now_s();
  for (uint32_t t = 0; t < ticks; t++) {
    if (t % 100 == 0)
      for (uint32_t i = 0; i < 10; i++) {
        pa_cmd c;
        pa_reply r;
        memset(&c, 0, sizeof c);
        c.op = PA_OP_SET_CMD;
        c.robot = i;
        c.drive.v = 1.4 * pa_sim_rng_uniform(&rng) - 0.2;
        c.drive.w = 3 * pa_sim_rng_uniform(&rng) - 1.5;
        pa_sim_apply(&m, &s, &c, &r);
      }
    pa_sim_step(&m, &s);
  }
  double wall = now_s() - t0;
  pa_sim_state_free(&s);
  pa_sim_model_free(&m);
  return wall / (ticks / d.control_hz);
}

int main(int argc, char **argv) {
  double sim_s = 10;
  uint32_t behaviour = PA_AGENT_PEDESTRIAN;
  uint32_t counts[8] = {100, 1000};
  int nc = 2;
  static const char *const names[] = {"", "constant", "waypoints", "random",
                                      "pedestrian"};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--behaviour") && i + 1 < argc) {
      behaviour = 0;
      for (uint32_t b = 1; b < PA_AGENT_COUNT; b++)
        if (!strcmp(argv[i + 1], names[b]))
          behaviour = b;
      if (!behaviour)
        die("--behaviour", "constant, waypoints, random or pedestrian");
      i++;
    } else if (!strcmp(argv[i], "--agents") && i + 1 < argc) {
      nc = 0;
      for (char *p = argv[++i]; *p && nc < 8;) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p || v < 0 || v > 2000)
          die("--agents", "counts 0..2000, comma-separated");
        counts[nc++] = (uint32_t)v;
        p = *e == ',' ? e + 1 : e;
      }
    } else if (atof(argv[i]) > 0) {
      sim_s = atof(argv[i]);
    } else {
      fprintf(stderr, "usage: bench-agents [sim_seconds] [--behaviour "
                      "constant|waypoints|random|pedestrian] [--agents "
                      "N,N,...]\n");
      return 2;
    }
  }
  pa_grid g;
  room(&g);
  uint32_t placed;
  double base = run(&g, 0, behaviour, sim_s, &placed);
  printf("bench-agents: 40 m room, 10 robots (360 beams at 10 Hz), 200 Hz, "
         "%g s simulated, 1 thread\n",
         sim_s);
  printf("  %4u agents: rtf %8.1f  (%.3f ms per tick)\n", 0u, 1 / base,
         base / 200 * 1e3);
  for (int k = 0; k < nc; k++) {
    double c = run(&g, counts[k], behaviour, sim_s, &placed);
    printf("  %4u agents (%s): rtf %8.1f  (%.3f ms per tick, %.2f us per "
           "agent-tick over the robots alone)\n",
           placed, names[behaviour], 1 / c, c / 200 * 1e3,
           placed ? (c - base) / 200 * 1e6 / placed : 0.0);
  }
  free(g.cells);
  return 0;
}
