# bench-launch: cold start and restart times of the real stack (prints figures).
if(TARGET pa_test_launch_util AND TARGET pa-sim AND TARGET pa-netgw AND TARGET pa-render)
  add_executable(bench-launch bench_launch.c)
  target_link_libraries(bench-launch PRIVATE pa_launch pa_test_launch_util)
  add_dependencies(bench-launch playarea pa-sim pa-netgw pa-render)
endif()
