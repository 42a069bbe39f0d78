# bench-sim: laser beams/s, real-time factor, loop timing, RSS (prints figures).
add_executable(bench-sim bench_sim.c)
target_include_directories(bench-sim PRIVATE ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(bench-sim PRIVATE pa_sim pa_util)
# bench-sim-rss: RSS of pa-sim + pa-netgw with many robots on the real stack.
if(TARGET pa_test_launch_util AND TARGET pa-sim AND TARGET pa-netgw)
  add_executable(bench-sim-rss bench_sim_rss.c)
  target_include_directories(bench-sim-rss PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(bench-sim-rss PRIVATE pa_sim pa_map pa_test_launch_util pa_util)
  add_dependencies(bench-sim-rss playarea pa-sim pa-netgw)
endif()
