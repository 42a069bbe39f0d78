/*
 * pa_map_stb.c - the one translation unit holding stb_image and
 * stb_image_write (third-party, compiled with relaxed warnings by CMake).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STB_IMAGE_IMPLEMENTATION
/* Only the formats the docs name; every other decoder (PIC, PSD, GIF, TGA,
 * HDR, PNM: PGM is decoded in pa_map_file.c) is left out of the binary. */
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_ONLY_JPEG
#define STBI_NO_HDR
#define STBI_NO_LINEAR
#define STBI_NO_STDIO
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include "pa_map_int.h"

unsigned char *pa_map_img_load(const char *path, const pa_map_guard *g,
                               const unsigned char *buf, size_t n,
                               uint32_t max_w, uint32_t max_h, int *w, int *h,
                               int *channels, char *err, size_t err_sz) {
  unsigned char *file = NULL, *px = NULL;
  const char *name = path ? path : "built-in default map";
  int iw = 0, ih = 0, ic = 0;
  if (path) {
    if (pa_map_read_file(path, g, PA_MAP_MAX_IMAGE_FILE, &file, &n, err,
                         err_sz))
      return NULL;
    buf = file;
  }
  pa_map_img_fmt fmt =
      pa_map_img_check(name, buf, n, max_w, max_h, err, err_sz);
  if (fmt == PA_IMG_BAD)
    goto out;
  if (fmt == PA_IMG_PGM) {
    px = pa_map_pgm_load(name, buf, n, max_w, max_h, &iw, &ih, err, err_sz);
    ic = 1;
    goto out;
  }
  if (n > (size_t)0x7fffffff) {
    snprintf(err, err_sz, "%s: image file too large", name);
    goto out;
  }
  /* The header as stb reads it must agree with the checks (JPEG's size is
   * only known this way). */
  if (!stbi_info_from_memory(buf, (int)n, &iw, &ih, &ic)) {
    snprintf(err, err_sz, "%s: not a readable image: %s", name,
             stbi_failure_reason() ? stbi_failure_reason() : "unknown");
    goto out;
  }
  if (iw <= 0 || ih <= 0 || (uint32_t)iw > max_w || (uint32_t)ih > max_h ||
      (uint64_t)iw * (uint64_t)ih * 4 > PA_MAP_MAX_DECODED) {
    snprintf(err, err_sz,
             "%s: image is %d x %d pixels, over the limit of %u x %u", name, iw,
             ih, (unsigned)max_w, (unsigned)max_h);
    goto out;
  }
  int dw = 0, dh = 0;
  px = stbi_load_from_memory(buf, (int)n, &dw, &dh, &ic, 0);
  if (!px) {
    snprintf(err, err_sz, "%s: cannot decode image (truncated or corrupt?): %s",
             name, stbi_failure_reason() ? stbi_failure_reason() : "unknown");
  } else if (dw != iw || dh != ih) {
    snprintf(err, err_sz, "%s: image decoded to another size", name);
    stbi_image_free(px);
    px = NULL;
  }
out:
  free(file);
  if (px) {
    *w = iw;
    *h = ih;
    *channels = ic;
  }
  return px;
}

void pa_map_img_free(unsigned char *p) { stbi_image_free(p); }

int pa_map_img_write_png(const char *path, int w, int h,
                         const unsigned char *grey) {
  return stbi_write_png(path, w, h, 1, grey, w) ? 0 : -1;
}

int pa_map_img_write_bmp(const char *path, int w, int h,
                         const unsigned char *grey) {
  return stbi_write_bmp(path, w, h, 1, grey) ? 0 : -1;
}

int pa_map_img_write_png_rgb(const char *path, int w, int h,
                             const unsigned char *rgb) {
  return stbi_write_png(path, w, h, 3, rgb, w * 3) ? 0 : -1;
}

int pa_map_img_write_png_n(const char *path, int w, int h, int comp,
                           const unsigned char *px) {
  return stbi_write_png(path, w, h, comp, px, w * comp) ? 0 : -1;
}
