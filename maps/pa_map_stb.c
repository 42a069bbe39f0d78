/*
 * pa_map_stb.c - the one translation unit holding stb_image and
 * stb_image_write (third-party, compiled with relaxed warnings by CMake).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_HDR
#define STBI_NO_LINEAR
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include "pa_map_int.h"

unsigned char *pa_map_img_load(const char *path, const unsigned char *buf,
                               size_t n, uint32_t max_w, uint32_t max_h,
                               int *w, int *h, int *channels, char *err,
                               size_t err_sz) {
  int iw = 0, ih = 0, ic = 0, ok;
  FILE *f = NULL;
  const char *name = path ? path : "built-in default map";
  if (path) {
    f = fopen(path, "rb");
    if (!f) {
      snprintf(err, err_sz, "%s: cannot open image: %s", path, strerror(errno));
      return NULL;
    }
    ok = stbi_info_from_file(f, &iw, &ih, &ic);
  } else {
    if (n > (size_t)0x7fffffff) {
      snprintf(err, err_sz, "%s: image too large", name);
      return NULL;
    }
    ok = stbi_info_from_memory(buf, (int)n, &iw, &ih, &ic);
  }
  if (!ok) {
    snprintf(err, err_sz, "%s: not a readable image (PNG, PGM, BMP, JPEG): %s",
             name, stbi_failure_reason() ? stbi_failure_reason() : "unknown");
    if (f) fclose(f);
    return NULL;
  }
  /* Refuse before decoding so a huge image cannot exhaust memory. */
  if (iw <= 0 || ih <= 0 || (uint32_t)iw > max_w || (uint32_t)ih > max_h) {
    snprintf(err, err_sz, "%s: image is %d x %d pixels, over the limit of %u x %u",
             name, iw, ih, (unsigned)max_w, (unsigned)max_h);
    if (f) fclose(f);
    return NULL;
  }
  unsigned char *px;
  if (f) {
    px = stbi_load_from_file(f, &iw, &ih, &ic, 0);
    fclose(f);
  } else {
    px = stbi_load_from_memory(buf, (int)n, &iw, &ih, &ic, 0);
  }
  if (!px) {
    snprintf(err, err_sz, "%s: cannot decode image (truncated or corrupt?): %s",
             name, stbi_failure_reason() ? stbi_failure_reason() : "unknown");
    return NULL;
  }
  *w = iw;
  *h = ih;
  *channels = ic;
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
