# bench-sim: laser beams/s, real-time factor, loop timing, RSS (prints figures).
add_executable(bench-sim bench_sim.c)
target_include_directories(bench-sim PRIVATE ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(bench-sim PRIVATE pa_sim pa_util)
