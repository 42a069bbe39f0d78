# render/ tests: real EGL on Mesa (llvmpipe; LIBGL_ALWAYS_SOFTWARE=1 comes
# from pa_add_test), frames checked by content; the process end to end.
if(TARGET pa_render)
  pa_add_test(test_render SOURCES test_render.c LIBS pa_render pa_map m
              TIMEOUT 120 LABELS render)
endif()
