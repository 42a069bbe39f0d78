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
  bool quiet;       /* a run-time load: errors never quote the file */
  const char *file; /* name used in error messages */
} pa_ydoc;

/* Parses a whole file (a regular file of at most PA_YAML_MAX_FILE bytes,
 * inside g's data directory when g has one) or buffer into d. One document,
 * nested at most PA_YAML_MAX_DEPTH deep, of at most PA_YAML_MAX_EVENTS
 * events; an empty document is an error. */
#define PA_YAML_MAX_FILE (4u << 20)
#define PA_YAML_MAX_DEPTH 64
#define PA_YAML_MAX_EVENTS 1000000u
int pa_map_ydoc_load_file(pa_ydoc *d, const char *path, const pa_map_guard *g,
                          char *err, size_t err_sz);
int pa_map_ydoc_load_buf(pa_ydoc *d, const char *name, const unsigned char *buf,
                         size_t n, char *err, size_t err_sz);
void pa_map_ydoc_free(pa_ydoc *d);
yaml_node_t *pa_map_ydoc_root(pa_ydoc *d);
yaml_node_t *pa_map_ynode(pa_ydoc *d, int id);

/* "file:line:column: " + message, at node's start (node may be NULL). */
int pa_map_yerr(const pa_ydoc *d, const yaml_node_t *n, char *err,
                size_t err_sz, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* s, or "..." in a quiet document (file content stays out of errors). */
const char *pa_map_yq(const pa_ydoc *d, const char *s);

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
/* lenient: a map.yaml file's keys, as map_server reads them (unknown ones
 * ignored, named in def->ignored_keys); else every key must be known. */
int pa_map_def_from_node_x(pa_ydoc *d, yaml_node_t *root, const char *base_dir,
                           bool lenient, pa_map_def *def, char *err,
                           size_t err_sz);
int pa_map_parse_yaml_g(const char *yaml_path, const pa_map_guard *g,
                        pa_map_def *def, char *err, size_t err_sz);
/* Range checks shared by every way of making a def; what names the source. */
int pa_map_def_check(const pa_map_def *def, const char *what, char *err,
                     size_t err_sz);
/* Directory part of path ("." when none). */
void pa_map_dirname(const char *path, char *out, size_t out_sz);
/* base_dir/rel unless rel is absolute; -1 if too long. */
int pa_map_join(const char *base_dir, const char *rel, char *out,
                size_t out_sz);

/* ---- files (pa_map_file.c) ---------------------------------------------- */

/* Largest image file read, and largest decoded image (w * h * 4 bytes). */
#define PA_MAP_MAX_IMAGE_FILE (256u << 20)
#define PA_MAP_MAX_DECODED (256ull << 20)

/* Reads a regular file of at most max bytes (opened without blocking: FIFOs,
 * ttys and devices are refused), confined by g. *buf is malloc'd. */
int pa_map_read_file(const char *path, const pa_map_guard *g, size_t max,
                     unsigned char **buf, size_t *n, char *err, size_t err_sz);

typedef enum pa_map_img_fmt {
  PA_IMG_BAD = 0,
  PA_IMG_PNG,
  PA_IMG_PGM,
  PA_IMG_BMP,
  PA_IMG_JPEG
} pa_map_img_fmt;
/* The format by its magic bytes, with its header and structure checked
 * (PNG: every chunk's length and CRC, IHDR, IDAT, IEND; BMP: header and the
 * whole pixel data present; JPEG: ends with EOI) and the size against
 * max_w x max_h and PA_MAP_MAX_DECODED; PA_IMG_BAD with the reason in err. */
pa_map_img_fmt pa_map_img_check(const char *name, const unsigned char *b,
                                size_t n, uint32_t max_w, uint32_t max_h,
                                char *err, size_t err_sz);
/* A binary PGM (P5, maxval 1..65535, scaled to 8 bits): malloc'd grey
 * pixels, NULL with the reason in err. */
unsigned char *pa_map_pgm_load(const char *name, const unsigned char *b,
                               size_t n, uint32_t max_w, uint32_t max_h, int *w,
                               int *h, char *err, size_t err_sz);

/* ---- stb ---------------------------------------------------------------- */

/* Decodes an image (file, confined by g, or memory) into 8-bit channels
 * (1..4, as stored): PNG, PGM, BMP and JPEG only, checked by
 * pa_map_img_check (so against max_w x max_h) before decoding. */
unsigned char *pa_map_img_load(const char *path, const pa_map_guard *g,
                               const unsigned char *buf, size_t n,
                               uint32_t max_w, uint32_t max_h, int *w, int *h,
                               int *channels, char *err, size_t err_sz);
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
