/* render_parts.h - private to render/: a robot's look as parts, drawn one
 * by one for a head camera (scene.c) and merged for many (atlas.c). */
#ifndef PA_RENDER_PARTS_H
#define PA_RENDER_PARTS_H

#include "render_int.h"

/* One part of a robot's look: a unit mesh placed by a pose (turned by the
 * angle whose cosine and sine are c and s) and a scale
 * (pa_render_mat_pose_cs), tinted rgb. */
typedef struct rpart {
  const rgpu_mesh *mesh;
  double x, y, z, c, s, scale[3];
  float rgb[3];
} rpart;
#define PA_RENDER_ROBOT_PARTS 5
/* View v's focal length drawn w px wide [px] (v NULL or w 0: 0). */
double pa_render_lod_focal(const pa_render_view *v, uint32_t w);
/* The level of detail (0..PA_RENDER_LODS - 1) of a robot of this radius at
 * pose p in view v of that focal length (0: the finest): the coarsest
 * whose body's outline strays at most ~0.3 px from its circle (n sides
 * stray r (1 - cos(pi / n)) from a circle of r px), its size on screen
 * taken at its centre's distance. A head camera and an atlas tile of the
 * same size choose the same. */
int pa_render_robot_lod(const pa_render_view *v, double focal, double radius,
                        const pa_render_pose *p);
/* Robot r at pose p as the parts the cameras draw at level of detail lod,
 * in order: their count. */
int pa_render_robot_parts(const pa_render_scene *s, const rrobot *r,
                          const pa_render_pose *p, int lod,
                          rpart out[PA_RENDER_ROBOT_PARTS]);
/* Its soft floor shadow (drawn blended with the scene's blob_prog, after
 * the floor, no depth write): the same at every level of detail. */
rpart pa_render_robot_shadow(const pa_render_scene *s, const rrobot *r,
                             const pa_render_pose *p);

#endif /* PA_RENDER_PARTS_H */
