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

/* The columns of the layout of n views in one pass (1..): tile i is at
 * column i % cols, row i / cols, whatever atlas of this size draws it. */
uint32_t pa_render_atlas_columns(const pa_render_atlas *a, uint32_t n);

/* As pa_render_atlas_render, only the views [t0, t1) of n (n within one
 * pass: pa_render_atlas_tiles_per_pass), each in its tile of n's layout,
 * into rgb's tiles [t0, t1) (rgb holds all n; the others are not
 * touched). Parts of one batch drawn by atlases of this size in several
 * GL contexts at once (pa_render_atlas_pool) give the bytes one atlas
 * gives for all n. */
int pa_render_atlas_render_part(pa_render_atlas *a, pa_render_scene *s,
                                const pa_render_view *views, const bool *draw,
                                uint32_t n, uint32_t t0, uint32_t t1,
                                uint8_t *rgb, char *err, size_t err_sz);

/* ---- one batch drawn by several GL contexts at once (atlas_pool.c) ---- */

#define PA_RENDER_ATLAS_POOL_MAX 7 /* helpers */

/* On llvmpipe a context's vertex work, set-up and binning run on the thread
 * that calls GL, most of a batch of small tiles: one context keeps about one
 * core busy. A pool's helpers are threads, each with its own EGL context,
 * copy of the scene and atlas, drawing the last tiles of a batch while
 * the caller draws the first ones. */
typedef struct pa_render_atlas_pool pa_render_atlas_pool;

/* Starts `helpers` threads (0..PA_RENDER_ATLAS_POOL_MAX) and their EGL
 * contexts, one after the other while the caller waits (call it while no
 * other thread of the process calls GL). */
int pa_render_atlas_pool_create(pa_render_atlas_pool **out, uint32_t helpers,
                                char *err, size_t err_sz);
/* Stops the helpers, frees their contexts (NULL: nothing). */
void pa_render_atlas_pool_free(pa_render_atlas_pool *p);
uint32_t pa_render_atlas_pool_helpers(const pa_render_atlas_pool *p);
/* The helpers build their scenes from what the caller's was built from
 * (pa_render_scene_build's inputs), at once, and remember key (the
 * caller's name for that world, not 0); 0 or -1 with err (then no key). */
int pa_render_atlas_pool_build(pa_render_atlas_pool *p, const pa_grid *g,
                               const pa_robot_info *robots,
                               uint32_t robot_count,
                               const pa_obstacle_info *obstacles,
                               uint32_t obstacle_count, uint64_t key, char *err,
                               size_t err_sz);
/* The key of the helpers' scenes (0: none; NULL pool: 0). */
uint64_t pa_render_atlas_pool_key(const pa_render_atlas_pool *p);
/* pa_render_atlas_render(a, s, ...), the tiles shared out to the helpers
 * (their scenes set to s's poses, SSL and switches first) when they have a
 * scene and the batch fits in one pass: the same bytes. The first batch of
 * n is split by rows evenly; each next one by the last one's times
 * (pa_render_atlas_pool_balance). s must be built from what the helpers'
 * scenes were (the caller checks the key); p NULL or without a scene: a
 * alone. */
int pa_render_atlas_pool_render(pa_render_atlas_pool *p, pa_render_atlas *a,
                                pa_render_scene *s, const pa_render_view *views,
                                const bool *draw, uint32_t n, uint8_t *rgb,
                                char *err, size_t err_sz);
/* The next split of a batch from the last one's: ends[0..parts] (ends[0]
 * 0, ends[parts] the batch's n; part k drew tiles [ends[k], ends[k+1]) in
 * ns[k], from the moment the parts were handed out). Each inner end moves
 * half the way to where every part would have taken as long, by whole
 * tiles, and only when that is more than half a tile; every part keeps at
 * least one tile. Bad input (times <= 0, empty parts): ends unchanged. */
void pa_render_atlas_pool_balance(uint32_t *ends, uint32_t parts,
                                  const int64_t *ns);
/* Fixes the split of batches of n into parts (2..helpers + 1) at ends
 * (ends[0] 0, ends[parts] n, increasing), as a test or a benchmark asks;
 * parts 0: back to the balanced split. 0, or -1 (nothing changed). */
int pa_render_atlas_pool_set_ends(pa_render_atlas_pool *p, uint32_t n,
                                  uint32_t parts, const uint32_t *ends);
/* The split the next batch of its n gets (ends[0..parts], room for
 * PA_RENDER_ATLAS_POOL_MAX + 2): parts, or 0 (none yet). */
uint32_t pa_render_atlas_pool_ends(const pa_render_atlas_pool *p,
                                   uint32_t *ends);

#ifdef __cplusplus
}
#endif
#endif /* PA_RENDER_ATLAS_H */
