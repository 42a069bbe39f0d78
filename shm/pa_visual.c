/* pa_visual.c - names of the visual types (pa_visual.h). */
#include "pa_visual.h"

#include <string.h>

static const char *const names[PA_VIS_TYPE_COUNT] = {
    "none",     "sphere",      "box",  "cylinder", "capsule",   "arrow",
    "polyline", "point_cloud", "text", "mesh",     "heightmap", "instanced"};

const char *pa_vis_type_name(uint32_t t) {
  return t < PA_VIS_TYPE_COUNT ? names[t] : "none";
}

uint32_t pa_vis_type_from_name(const char *s) {
  for (uint32_t t = 1; t < PA_VIS_TYPE_COUNT; t++)
    if (!strcmp(s, names[t]))
      return t;
  return PA_VIS_NONE;
}
