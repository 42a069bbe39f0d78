add_executable(bench-map bench_map.c)
target_link_libraries(bench-map PRIVATE pa_map_internal PkgConfig::YAML)
