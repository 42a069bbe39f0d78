# bench-render: head-camera fps and CPU per frame, and the CPU share of a
# 15 Hz stream from the real pa-render (prints figures).
if(TARGET pa_render)
  add_executable(bench-render bench_render.c)
  target_link_libraries(bench-render PRIVATE pa_render pa_map pa_shm pa_util m)
  add_dependencies(bench-render pa-render)
endif()

# bench-atlas: batched head cameras against one at a time (prints figures).
if(TARGET pa_render)
  add_executable(bench-atlas bench_atlas.c)
  target_link_libraries(bench-atlas PRIVATE pa_render pa_map pa_util m)
endif()
