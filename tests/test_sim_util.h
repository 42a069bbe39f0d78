/* test_sim_util.h - worlds built by hand for the sim tests and benchmark. */
#ifndef PA_TEST_SIM_UTIL_H
#define PA_TEST_SIM_UTIL_H

#include "pa_map.h"
#include "pa_sim.h"

/* A w x h cell room with a one-cell wall all around, origin (0, 0). */
void ts_room(pa_grid *g, uint32_t w, uint32_t h, double res);
/* Marks the cells whose centres fall in [x0, x1] x [y0, y1] (world) blocked. */
void ts_block(pa_grid *g, double x0, double y0, double x1, double y1);
/* A robot def at a pose (defaults otherwise). */
pa_robot_def ts_robot(const char *name, double x, double y, double theta);
/* Obstacle defs: a box (sides sx x sy, turned by theta) and a circle. */
pa_obstacle_def ts_box(const char *name, double x, double y, double theta,
                       double sx, double sy);
pa_obstacle_def ts_circle(const char *name, double x, double y, double radius);
/* Model + state over grid g (copied) with the given robots/obstacles. */
void ts_make(pa_sim_model *m, pa_sim_state *s, const pa_sim_def *d,
             const pa_grid *g, pa_robot_def *robots, size_t nr,
             pa_obstacle_def *obs, size_t no);
/* ts_make with pa_sim_def_default(), then frees g (a fixture's own grid). */
void ts_make_default(pa_sim_model *m, pa_sim_state *s, pa_grid *g,
                     pa_robot_def *robots, size_t nr, pa_obstacle_def *obs,
                     size_t no);
void ts_free(pa_sim_model *m, pa_sim_state *s);
/* A model and its state as a cmocka fixture's state: a setup fills the one
 * ts_world_alloc gives (its *st), ts_world_free is the teardown. */
typedef struct ts_world {
  pa_sim_model m;
  pa_sim_state s;
} ts_world;
ts_world *ts_world_alloc(void **st);
int ts_world_free(void **st);
/* Applies a command and returns its status. */
pa_status ts_cmd(const pa_sim_model *m, pa_sim_state *s, uint32_t op,
                 uint32_t robot, double a0, double a1, double a2, double a3);

#endif
