/* test_render_egl.h - the headless EGL context (Mesa's surfaceless
 * platform) a render test's group runs in: egl_setup() makes it,
 * egl_teardown() destroys it (a group's own setup may call them first). Include
 * after cmocka.h and pa_render.h. */
#ifndef PA_TEST_RENDER_EGL_H
#define PA_TEST_RENDER_EGL_H

#include <stdio.h>

static pa_render_egl *egl;

static int egl_setup(void **state) {
  (void)state;
  char err[256];
  if (pa_render_egl_create(&egl, err, sizeof err) != 0) {
    fprintf(stderr, "EGL: %s\n", err);
    return -1;
  }
  return 0;
}

static int egl_teardown(void **state) {
  (void)state;
  pa_render_egl_destroy(egl);
  return 0;
}

#endif /* PA_TEST_RENDER_EGL_H */
