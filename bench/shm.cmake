# bench-shm: wake-up latency, ring throughput and copy bandwidth of pa_shm.
add_executable(bench-shm ${CMAKE_CURRENT_SOURCE_DIR}/bench_shm.c)
target_link_libraries(bench-shm PRIVATE pa_shm pa_util)
