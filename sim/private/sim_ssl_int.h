/* sim_ssl_int.h - the SSL field inside pa_sim (sim_ssl.c): the tick's
 * hooks and the SSL ops. The physics itself: sim_ssl.h. */
#ifndef PA_SIM_SSL_INT_H
#define PA_SIM_SSL_INT_H

#include "pa_sim.h"
#include "sim_ssl.h"

/* Before the robots move: each SSL robot's target twist through the norm
 * limits into its held command. After: the ball's tick, contacts into the
 * robots' flags. Both only with s->ssl. */
void pa_sim_ssl_pre(const pa_sim_model *m, pa_sim_state *s);
void pa_sim_ssl_post(const pa_sim_model *m, pa_sim_state *s);
/* The ball back at the centre, robots set up again (RESET). */
void pa_sim_ssl_reset(pa_sim_state *s);
/* The tick record's SSL fields. */
void pa_sim_ssl_tick_fill(const pa_sim_state *s, pa_tick *t);
/* The ball's cross-section in the lasers' plane (PA_SSL_LASER_HEIGHT):
 * false when there is no ball or it is above or below the plane. */
bool pa_sim_ssl_laser_ball(const pa_sim_state *s, double *x, double *y,
                           double *r);
/* The ball as a tick record left it (a restarted pa-sim resumes). */
void pa_sim_ssl_resume(pa_sim_state *s, const pa_tick *t);

pa_status pa_sim_int_op_ssl_robot(const pa_sim_model *m, pa_sim_state *s,
                                  const pa_cmd *c, pa_reply *r);
pa_status pa_sim_int_op_teleport_ball(const pa_sim_model *m, pa_sim_state *s,
                                      const pa_cmd *c, pa_reply *r);
pa_status pa_sim_int_op_get_ball(const pa_sim_model *m, pa_sim_state *s,
                                 const pa_cmd *c, pa_reply *r);
pa_status pa_sim_int_op_ssl_specs(const pa_sim_model *m, pa_sim_state *s,
                                  const pa_cmd *c, pa_reply *r);
pa_status pa_sim_int_op_teleport_moving(const pa_sim_model *m, pa_sim_state *s,
                                        const pa_cmd *c, pa_reply *r);

#endif
