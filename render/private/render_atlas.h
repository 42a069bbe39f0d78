/* render_atlas.h - pa-render's side of camera_batch: the atlas segment's
 * requests answered with pa_render_atlas (atlas_serve.c). */
#ifndef RENDER_ATLAS_H
#define RENDER_ATLAS_H

#include "pa_render.h"
#include "pa_render_atlas.h"

typedef struct pa_atlas_srv pa_atlas_srv;

/* Opens the instance's atlas segment and claims it (render_pid). */
int pa_atlas_srv_open(pa_atlas_srv **out, pa_stack *st, char *err,
                      size_t err_sz);
/* Clears the claim and frees (NULL: nothing). */
void pa_atlas_srv_close(pa_atlas_srv *a);
/* A request waits for an answer. */
bool pa_atlas_srv_pending(const pa_atlas_srv *a);
/* Answers the pending request from tick t (poses set in scene; drawn with
 * pool's helpers too when it is not NULL: their scenes are scene's), or
 * returns 1 when t is older than the request's min_tick (call again
 * later). A bad request is answered with its status; -1 only on a GL
 * error. */
int pa_atlas_srv_serve(pa_atlas_srv *a, pa_render_atlas_pool *pool,
                       pa_render_scene *scene, const pa_robot_info *robots,
                       uint32_t robot_count, const pa_render_pose *poses,
                       const pa_tick *t, char *err, size_t err_sz);

#endif /* RENDER_ATLAS_H */
