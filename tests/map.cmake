# maps/: map_server semantics, default world, save/load, flags, world files,
# distance field, the pa-map tool.
pa_add_test(test_map SOURCES test_map.c LIBS pa_map_internal TIMEOUT 60)
target_link_libraries(test_map PRIVATE PkgConfig::YAML)
pa_add_test(test_map_dist SOURCES test_map_dist.c LIBS pa_map TIMEOUT 60)
pa_add_test(test_map_world SOURCES test_map_world.c LIBS pa_map TIMEOUT 60)
pa_add_test(test_map_tool SOURCES test_map_tool.c LIBS pa_map TIMEOUT 120)
add_dependencies(test_map_tool pa-map)
pa_add_test(test_map_files SOURCES test_map_files.c LIBS pa_map_internal TIMEOUT 60)
target_link_libraries(test_map_files PRIVATE PkgConfig::YAML)
