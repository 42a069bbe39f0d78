/* render_parts.h - private to render/: a robot's look as parts, drawn one
 * by one for a head camera (scene.c) and merged for many (atlas.c). */
#ifndef PA_RENDER_PARTS_H
#define PA_RENDER_PARTS_H

#include "render_int.h"

/* One part of a robot's look: a unit mesh placed by a pose and a scale
 * (pa_render_mat_pose), tinted rgb. */
typedef struct rpart {
  const rgpu_mesh *mesh;
  double x, y, z, yaw, scale[3];
  float rgb[3];
} rpart;
#define PA_RENDER_ROBOT_PARTS 5
/* Robot r at pose p as the parts the cameras draw, in order: their count. */
int pa_render_robot_parts(const pa_render_scene *s, const rrobot *r,
                          const pa_render_pose *p,
                          rpart out[PA_RENDER_ROBOT_PARTS]);
/* Its soft floor shadow (drawn blended, after the floor, no depth write). */
rpart pa_render_robot_shadow(const pa_render_scene *s, const rrobot *r,
                             const pa_render_pose *p);

#endif /* PA_RENDER_PARTS_H */
