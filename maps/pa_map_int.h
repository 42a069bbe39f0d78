/*
 * pa_map_int.h - private to the pa_map library: YAML helpers over libyaml's
 * document API (errors as "file:line:column: message"), the embedded default
 * map, image decoding/encoding through stb.
 */
#ifndef PA_MAP_INT_H
#define PA_MAP_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "pa_map.h"

/* maps/default.png and maps/default.yaml, embedded at build time. */
extern const unsigned char pa_map_default_png[];
extern const size_t pa_map_default_png_size;
extern const unsigned char pa_map_default_yaml[];
extern const size_t pa_map_default_yaml_size;

/* ---- YAML --------------------------------------------------------------- */

typedef struct pa_ydoc {
  yaml_document_t doc;
  bool loaded;
  const char *file; /* name used in error messages */
} pa_ydoc;

/* Parses a whole file (limit 16 MB) or buffer into d. An empty document is an
 * error. */
int pa_map_ydoc_load_file(pa_ydoc *d, const char *path, char *err,
                          size_t err_sz);
int pa_map_ydoc_load_buf(pa_ydoc *d, const char *name, const unsigned char *buf,
                         size_t n, char *err, size_t err_sz);
void pa_map_ydoc_free(pa_ydoc *d);
yaml_node_t *pa_map_ydoc_root(pa_ydoc *d);
yaml_node_t *pa_map_ynode(pa_ydoc *d, int id);

/* "file:line:column: " + message, at node's start (node may be NULL). */
int pa_map_yerr(const pa_ydoc *d, const yaml_node_t *n, char *err,
                size_t err_sz, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Type-checked scalar reads; errors name the key ("what"). */
int pa_map_ynum(pa_ydoc *d, yaml_node_t *n, const char *what, double *out,
                char *err, size_t err_sz);
int pa_map_yint(pa_ydoc *d, yaml_node_t *n, const char *what, long *out,
                char *err, size_t err_sz);
int pa_map_ybool(pa_ydoc *d, yaml_node_t *n, const char *what, bool *out,
                 char *err, size_t err_sz);
int pa_map_ystr(pa_ydoc *d, yaml_node_t *n, const char *what, char *out,
                size_t out_sz, char *err, size_t err_sz);
/* A sequence of between min_n and max_n numbers; *n_out gets the count. */
int pa_map_ynums(pa_ydoc *d, yaml_node_t *n, const char *what, double *out,
                 size_t min_n, size_t max_n, size_t *n_out, char *err,
                 size_t err_sz);
/* Requires a mapping whose keys are scalars from allowed (NULL-terminated);
 * rejects unknown and duplicate keys. */
int pa_map_ycheck_keys(pa_ydoc *d, yaml_node_t *n, const char *what,
                       const char *const *allowed, char *err, size_t err_sz);
/* Value of key in mapping n, or NULL. */
yaml_node_t *pa_map_yget(pa_ydoc *d, yaml_node_t *n, const char *key);

/* ---- map yaml ----------------------------------------------------------- */

/* Fills def from a map mapping node (map.yaml root or a world's inline map);
 * a relative image is resolved against base_dir. */
int pa_map_def_from_node(pa_ydoc *d, yaml_node_t *n, const char *base_dir,
                         pa_map_def *def, char *err, size_t err_sz);
/* Range checks shared by every way of making a def; what names the source. */
int pa_map_def_check(const pa_map_def *def, const char *what, char *err,
                     size_t err_sz);
/* Directory part of path ("." when none). */
void pa_map_dirname(const char *path, char *out, size_t out_sz);
/* base_dir/rel unless rel is absolute; -1 if too long. */
int pa_map_join(const char *base_dir, const char *rel, char *out,
                size_t out_sz);

/* ---- stb ---------------------------------------------------------------- */

/* Decodes an image (file or memory) into 8-bit channels (1..4, as stored).
 * Checks the size against max_w x max_h before decoding. */
unsigned char *pa_map_img_load(const char *path, const unsigned char *buf,
                               size_t n, uint32_t max_w, uint32_t max_h,
                               int *w, int *h, int *channels, char *err,
                               size_t err_sz);
void pa_map_img_free(unsigned char *p);
/* Writes 8-bit grey pixels (row 0 = top) as PNG or BMP; 0 on success. */
int pa_map_img_write_png(const char *path, int w, int h,
                         const unsigned char *grey);
int pa_map_img_write_bmp(const char *path, int w, int h,
                         const unsigned char *grey);
/* PNG with comp channels (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA). */
int pa_map_img_write_png_n(const char *path, int w, int h, int comp,
                           const unsigned char *px);
/* RGB PNG (3 channels). */
int pa_map_img_write_png_rgb(const char *path, int w, int h,
                             const unsigned char *rgb);

#endif
