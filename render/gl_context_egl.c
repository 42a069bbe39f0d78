/* gl_context_egl.c - a headless GL 3.3 core context on Mesa's surfaceless
 * EGL platform (no X server, no GPU), or on EGL's device platform with
 * PA_EGL_PLATFORM=device, and GL loading/error helpers. */
#include "render_int.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef EGL_PLATFORM_SURFACELESS_MESA
#define EGL_PLATFORM_SURFACELESS_MESA 0x31DD
#endif
#ifndef GL_CONTEXT_LOST
#define GL_CONTEXT_LOST 0x0507 /* GL 4.5 / KHR_robustness, absent from 3.3 */
#endif

struct pa_render_egl {
  EGLDisplay dpy;
  EGLContext ctx;
};

static const char *egl_errstr(EGLint e) {
  switch (e) {
  case EGL_SUCCESS: return "EGL_SUCCESS";
  case EGL_NOT_INITIALIZED: return "EGL_NOT_INITIALIZED";
  case EGL_BAD_ACCESS: return "EGL_BAD_ACCESS";
  case EGL_BAD_ALLOC: return "EGL_BAD_ALLOC";
  case EGL_BAD_ATTRIBUTE: return "EGL_BAD_ATTRIBUTE";
  case EGL_BAD_CONFIG: return "EGL_BAD_CONFIG";
  case EGL_BAD_CONTEXT: return "EGL_BAD_CONTEXT";
  case EGL_BAD_DISPLAY: return "EGL_BAD_DISPLAY";
  case EGL_BAD_MATCH: return "EGL_BAD_MATCH";
  case EGL_BAD_PARAMETER: return "EGL_BAD_PARAMETER";
  case EGL_CONTEXT_LOST: return "EGL_CONTEXT_LOST";
  default: return "EGL error";
  }
}

/* err = "EGL: <what> (<the last EGL error>)". */
static void egl_fail(char *err, size_t err_sz, const char *what) {
  snprintf(err, err_sz, "EGL: %s (%s)", what, egl_errstr(eglGetError()));
}

static int gl_check_version(char *err, size_t err_sz) {
  GLint major = 0, minor = 0;
  glGetIntegerv(GL_MAJOR_VERSION, &major);
  glGetIntegerv(GL_MINOR_VERSION, &minor);
  if (major * 10 + minor < 33) {
    snprintf(err, err_sz, "GL context is %d.%d, need 3.3 core", major, minor);
    return -1;
  }
  return 0;
}

/* PA_EGL_PLATFORM=device: the first EGL device (EGL_EXT_platform_device:
 * a GPU without Mesa's surfaceless platform, e.g. NVIDIA's driver; on
 * Mesa with LIBGL_ALWAYS_SOFTWARE its software device). 1 with e->dpy
 * set, 0 for the default surfaceless platform, -1 with err set. */
static int egl_device_display(pa_render_egl *e,
                              PFNEGLGETPLATFORMDISPLAYEXTPROC get_display,
                              char *err, size_t err_sz) {
  const char *plat = getenv("PA_EGL_PLATFORM");
  if (!plat || !*plat || !strcmp(plat, "surfaceless"))
    return 0;
  if (strcmp(plat, "device")) {
    snprintf(err, err_sz,
             "EGL: PA_EGL_PLATFORM is '%.40s', not surfaceless or device",
             plat);
    return -1;
  }
  PFNEGLQUERYDEVICESEXTPROC query =
      (PFNEGLQUERYDEVICESEXTPROC)eglGetProcAddress("eglQueryDevicesEXT");
  EGLDeviceEXT devs[8];
  EGLint n = 0;
  if (!query || !query(8, devs, &n) || n < 1) {
    snprintf(err, err_sz,
             "EGL: PA_EGL_PLATFORM=device but no EGL device is listed "
             "(EGL_EXT_device_enumeration)");
    return -1;
  }
  e->dpy = get_display(EGL_PLATFORM_DEVICE_EXT, devs[0], NULL);
  return 1;
}

/* llvmpipe allocates its bins in 64 KB blocks for every frame and frees them
 * when the rasteriser is done; glibc then gives the top of the heap back to
 * the kernel and takes it again the next frame, and the page faults and
 * brk calls were a quarter of the CPU of 64 cameras of 84 x 84
 * (docs/benchmarks.md). Keep freed memory (a peak's worth) in the heap. */
static void egl_keep_heap(void) {
#ifdef __GLIBC__
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
}

/* eglInitialize(d), llvmpipe's screen made with `threads` rasteriser
 * threads: LP_NUM_THREADS, which it reads then, set meanwhile (threads < 0,
 * or the variable set in the environment: as it is). The callers make sure
 * that no other thread of ours reads the environment meanwhile (pa-render
 * before its first thread; a pool's helper while its caller waits). */
static EGLBoolean init_display(EGLDisplay d, int threads) {
  bool set = threads >= 0 && !getenv("LP_NUM_THREADS");
  if (set) {
    char v[16];
    snprintf(v, sizeof v, "%d", threads);
    setenv("LP_NUM_THREADS", v, 1);
  }
  EGLint maj = 0, min = 0;
  EGLBoolean ok = eglInitialize(d, &maj, &min);
  if (set)
    unsetenv("LP_NUM_THREADS");
  return ok;
}

/* Mesa's software device on EGL's device platform: a display of its own,
 * apart from the surfaceless one (its own llvmpipe screen).
 * EGL_NO_DISPLAY when there is none. */
static EGLDisplay own_software_display(PFNEGLGETPLATFORMDISPLAYEXTPROC get) {
  PFNEGLQUERYDEVICESEXTPROC query =
      (PFNEGLQUERYDEVICESEXTPROC)eglGetProcAddress("eglQueryDevicesEXT");
  PFNEGLQUERYDEVICESTRINGEXTPROC str =
      (PFNEGLQUERYDEVICESTRINGEXTPROC)eglGetProcAddress(
          "eglQueryDeviceStringEXT");
  EGLDeviceEXT devs[8];
  EGLint n = 0;
  if (!query || !str || !query(8, devs, &n))
    return EGL_NO_DISPLAY;
  for (EGLint i = 0; i < n; i++) {
    const char *ext = str(devs[i], EGL_EXTENSIONS);
    if (!ext || !strstr(ext, "EGL_MESA_device_software"))
      continue;
    return get(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL);
  }
  return EGL_NO_DISPLAY;
}

/* pa_render_egl_create with `threads` rasteriser threads when the display
 * is made (init_display); helper_of (not NULL): a helper's context beside a
 * context whose GL_RENDERER is helper_of (pa_render_egl_create_helper), on
 * a display of its own when own and the renderer is llvmpipe. */
static int egl_create(pa_render_egl **out, const char *helper_of, bool own,
                      int threads, char *err, size_t err_sz) {
  *out = NULL;
  egl_keep_heap();
  PFNEGLGETPLATFORMDISPLAYEXTPROC get_display =
      (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress(
          "eglGetPlatformDisplayEXT");
  if (!get_display) {
    snprintf(err, err_sz,
             "EGL: eglGetPlatformDisplayEXT is missing (no EGL vendor "
             "library? install libegl-mesa0)");
    return -1;
  }
  pa_render_egl *e = calloc(1, sizeof *e);
  if (!e) {
    snprintf(err, err_sz, "EGL: out of memory");
    return -1;
  }
  int dev = egl_device_display(e, get_display, err, err_sz);
  if (dev < 0)
    goto fail;
  if (!dev && own && helper_of && !strncmp(helper_of, "llvmpipe", 8))
    e->dpy = own_software_display(get_display);
  if (!dev && e->dpy == EGL_NO_DISPLAY)
    e->dpy =
        get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
  if (e->dpy == EGL_NO_DISPLAY) {
    snprintf(err, err_sz,
             "EGL: no surfaceless Mesa display (%s); is libegl-mesa0 "
             "installed?", egl_errstr(eglGetError()));
    goto fail;
  }
  if (!init_display(e->dpy, threads)) {
    egl_fail(err, err_sz, "eglInitialize failed");
    e->dpy = EGL_NO_DISPLAY;
    goto fail;
  }
  if (!eglBindAPI(EGL_OPENGL_API)) {
    egl_fail(err, err_sz, "desktop OpenGL is not available");
    goto fail;
  }
  static const EGLint cfg_attr[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT,
                                    EGL_SURFACE_TYPE, EGL_PBUFFER_BIT,
                                    EGL_NONE};
  EGLConfig cfg = NULL;
  EGLint n = 0;
  if (!eglChooseConfig(e->dpy, cfg_attr, &cfg, 1, &n) || n < 1) {
    /* Surfaceless configs may advertise no surface type at all. */
    static const EGLint cfg_any[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT,
                                     EGL_SURFACE_TYPE, 0, EGL_NONE};
    if (!eglChooseConfig(e->dpy, cfg_any, &cfg, 1, &n) || n < 1) {
      egl_fail(err, err_sz, "no config renders desktop OpenGL");
      goto fail;
    }
  }
  static const EGLint ctx_attr[] = {
      EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3,
      EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
      EGL_NONE};
  e->ctx = eglCreateContext(e->dpy, cfg, EGL_NO_CONTEXT, ctx_attr);
  if (e->ctx == EGL_NO_CONTEXT) {
    egl_fail(err, err_sz, "cannot create a GL 3.3 core context");
    goto fail;
  }
  if (!eglMakeCurrent(e->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, e->ctx)) {
    egl_fail(err, err_sz, "eglMakeCurrent without a surface failed");
    goto fail;
  }
  if (pa_render_gl_load(eglGetProcAddress, err, err_sz) < 0)
    goto fail;
  if (helper_of && strcmp(pa_render_gl_renderer(), helper_of)) {
    snprintf(err, err_sz, "EGL: a helper's context renders with %s, not %s",
             pa_render_gl_renderer(), helper_of);
    goto fail;
  }
  *out = e;
  return 0;
fail:
  pa_render_egl_destroy(e);
  return -1;
}

int pa_render_egl_create(pa_render_egl **out, char *err, size_t err_sz) {
  return egl_create(out, NULL, false, -1, err, err_sz);
}

int pa_render_egl_create_threads(pa_render_egl **out, uint32_t threads,
                                 char *err, size_t err_sz) {
  return egl_create(out, NULL, false, threads > 4096 ? 4096 : (int)threads, err,
                    err_sz);
}

int pa_render_egl_create_helper(pa_render_egl **out, const char *renderer,
                                bool own, char *err, size_t err_sz) {
  /* its own screen: no rasteriser threads (its thread is its drawing; the
   * caller's context keeps its) */
  if (own && egl_create(out, renderer, true, 0, err, err_sz) == 0)
    return 0;
  return egl_create(out, renderer, false, -1, err, err_sz); /* the shared */
}

void pa_render_egl_destroy(pa_render_egl *e) {
  if (!e)
    return;
  if (e->dpy != EGL_NO_DISPLAY) {
    eglMakeCurrent(e->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (e->ctx != EGL_NO_CONTEXT)
      eglDestroyContext(e->dpy, e->ctx);
    /* No eglTerminate: the display is process-wide in Mesa and terminating
     * unloads the driver, whose remaining allocations then show up as
     * unattributable leaks under LeakSanitizer. The driver is reused by the
     * next pa_render_egl_create. */
    eglReleaseThread();
  }
  free(e);
}

int pa_render_egl_check(pa_render_egl *e, char *err, size_t err_sz) {
  if (!eglMakeCurrent(e->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, e->ctx)) {
    egl_fail(err, err_sz, "GL context is gone");
    return -1;
  }
  return 0;
}

int pa_render_gl_load(pa_render_glproc (*get_proc)(const char *name),
                      char *err, size_t err_sz) {
  if (!gladLoadGL((GLADloadfunc)get_proc)) {
    snprintf(err, err_sz, "GL: loading GL functions failed");
    return -1;
  }
  return gl_check_version(err, err_sz);
}

static const char *gl_errstr(GLenum e) {
  switch (e) {
  case GL_INVALID_ENUM: return "GL_INVALID_ENUM";
  case GL_INVALID_VALUE: return "GL_INVALID_VALUE";
  case GL_INVALID_OPERATION: return "GL_INVALID_OPERATION";
  case GL_INVALID_FRAMEBUFFER_OPERATION:
    return "GL_INVALID_FRAMEBUFFER_OPERATION";
  case GL_OUT_OF_MEMORY: return "GL_OUT_OF_MEMORY";
  case GL_CONTEXT_LOST: return "GL_CONTEXT_LOST";
  default: return "unknown GL error";
  }
}

int pa_render_gl_check(const char *where, char *err, size_t err_sz) {
  GLenum first = GL_NO_ERROR, e;
  int guard = 0;
  /* A lost context may report errors forever: bound the drain. */
  while ((e = glGetError()) != GL_NO_ERROR && guard++ < 32)
    if (first == GL_NO_ERROR)
      first = e;
  if (first == GL_NO_ERROR)
    return 0;
  snprintf(err, err_sz, "%s (0x%04x) %s", gl_errstr(first), (unsigned)first,
           where);
  return -1;
}

const char *pa_render_gl_renderer(void) {
  const GLubyte *s = glGetString(GL_RENDERER);
  return s ? (const char *)s : "unknown";
}
