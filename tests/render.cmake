# render/ tests: real EGL on Mesa (llvmpipe; LIBGL_ALWAYS_SOFTWARE=1 comes
# from pa_add_test), frames checked by content; the process end to end.
if(TARGET pa_render)
  pa_add_test(test_render SOURCES test_render.c LIBS pa_render pa_map m
              TIMEOUT 120 LABELS render)
  pa_add_test(test_render_shade SOURCES test_render_shade.c
              LIBS pa_render pa_map m TIMEOUT 120 LABELS render)
  pa_add_test(test_render_atlas SOURCES test_render_atlas.c
              LIBS pa_render pa_map pa_glad m TIMEOUT 120 LABELS render)
  # the same on EGL's device platform (Mesa's software device here; a GPU's
  # on a machine with one)
  add_test(NAME test_render_atlas_device COMMAND test_render_atlas)
  set_tests_properties(test_render_atlas_device PROPERTIES TIMEOUT 120
    LABELS render ENVIRONMENT "LIBGL_ALWAYS_SOFTWARE=1;MESA_SHADER_CACHE_DISABLE=true;PA_EGL_PLATFORM=device")
  pkg_check_modules(PA_TEST_STB REQUIRED IMPORTED_TARGET stb)
  pa_add_test(test_render_proc SOURCES test_render_proc.c
              LIBS pa_shm pa_map pa_util PkgConfig::PA_TEST_STB m
              TIMEOUT 180 LABELS render)
  add_dependencies(test_render_proc pa-render)
  if(TARGET pa-sim)
    add_dependencies(test_render_proc pa-sim) # test_e2e_sim skips without it
  endif()
endif()
