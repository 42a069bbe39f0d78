/* pa_render_atlas.h - many head cameras of one size in one pass: every view
 * drawn into its tile of one atlas framebuffer (glViewport per tile, the
 * static geometry shared, only the view matrices change), one readback per
 * atlas, the tiles copied out as N x h x w x 3 RGB (row 0 = top), what a
 * numpy array of shape (N, h, w, 3) is. Single sampled, the head cameras'
 * shading: tile i equals pa_render_cam_render of view i at w x h. The GL
 * context must be current, as for every pa_render function. */
#ifndef PA_RENDER_ATLAS_H
#define PA_RENDER_ATLAS_H

#include "pa_render.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PA_RENDER_ATLAS_MAX_SIDE PA_ATLAS_MAX_SIDE /* a tile's side [px] */
#define PA_RENDER_ATLAS_MAX_TILES PA_ATLAS_MAX_TILES

typedef struct pa_render_atlas pa_render_atlas;

/* A target for tiles of w x h (1..PA_RENDER_ATLAS_MAX_SIDE each); views
 * beyond what one framebuffer holds are drawn in further passes. */
int pa_render_atlas_create(pa_render_atlas **out, uint32_t w, uint32_t h,
                           char *err, size_t err_sz);
void pa_render_atlas_free(pa_render_atlas *a);
uint32_t pa_render_atlas_width(const pa_render_atlas *a);
uint32_t pa_render_atlas_height(const pa_render_atlas *a);
/* Tiles of one framebuffer (one readback). */
uint32_t pa_render_atlas_tiles_per_pass(const pa_render_atlas *a);

/* Draws views[i] into tile i for i < n (1..PA_RENDER_ATLAS_MAX_TILES) and
 * writes the tiles to rgb (n * h * w * 3 bytes). A view with draw[i] false
 * (draw may be NULL: all) is left zero (an inactive robot). The robots'
 * parts are merged into one buffer per call and each view draws, in one
 * multi-draw, those whose body or shadow can reach its horizontal field of
 * view and that the map's walls do not hide in every pixel column they
 * could cover; static chunks the walls hide are skipped too (no pixel
 * changes: pa_render_scene_set_culling(s, false) draws them all). s is as
 * it was when this returns. */
int pa_render_atlas_render(pa_render_atlas *a, pa_render_scene *s,
                           const pa_render_view *views, const bool *draw,
                           uint32_t n, uint8_t *rgb, char *err, size_t err_sz);

#ifdef __cplusplus
}
#endif
#endif /* PA_RENDER_ATLAS_H */
