# sim/ tests: the core driven directly (kinematics, collisions, laser, runs)
# and the real pa-sim process against an instance the test creates.
add_library(pa_test_sim STATIC test_sim_util.c)
target_link_libraries(pa_test_sim PUBLIC pa_sim PkgConfig::CMOCKA)
target_include_directories(pa_test_sim PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
pa_add_test(test_sim_kin SOURCES test_sim_kin.c LIBS pa_test_sim TIMEOUT 60 LABELS sim)
pa_add_test(test_sim_place SOURCES test_sim_place.c LIBS pa_test_sim TIMEOUT 120 LABELS sim)
pa_add_test(test_sim_collide SOURCES test_sim_collide.c LIBS pa_test_sim pa_sim_internal TIMEOUT 120 LABELS sim)
pa_add_test(test_sim_laser SOURCES test_sim_laser.c LIBS pa_test_sim TIMEOUT 240 LABELS sim)
pa_add_test(test_sim_lanes SOURCES test_sim_lanes.c LIBS pa_test_sim TIMEOUT 120 LABELS sim)
pa_add_test(test_sim_crowd SOURCES test_sim_crowd.c LIBS pa_test_sim pa_sim_internal pa_shm TIMEOUT 240 LABELS sim)
pa_add_test(test_sim_run SOURCES test_sim_run.c LIBS pa_test_sim pa_sim_internal TIMEOUT 240 LABELS sim)
pa_add_test(test_sim_proc SOURCES test_sim_proc.c LIBS pa_shm pa_map m TIMEOUT 120 LABELS sim)
add_dependencies(test_sim_proc pa-sim)
# Every caster path against the plain traversal on generated maps; the same
# source cross-built for AArch64 and run under qemu-user (skipped, exit 77,
# when the cross compiler or qemu is missing: scripts/setup.sh --test-deps
# installs them).
pa_add_test(test_sim_cast_exact SOURCES test_sim_cast_exact.c LIBS pa_sim_internal TIMEOUT 240 LABELS sim)
add_test(NAME test_sim_cast_aarch64
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/sim_cast_cross.sh ${CMAKE_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/cast_aarch64)
set_tests_properties(test_sim_cast_aarch64 PROPERTIES SKIP_RETURN_CODE 77
                     TIMEOUT 900 LABELS sim)
