# bench-sim: laser beams/s, real-time factor, loop timing, RSS (prints figures).
add_executable(bench-sim bench_sim.c)
target_link_libraries(bench-sim PRIVATE pa_sim)
