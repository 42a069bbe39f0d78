# sim/ tests: the core driven directly (kinematics, collisions, laser, runs)
# and the real pa-sim process against an instance the test creates.
add_library(pa_test_sim STATIC test_sim_util.c)
target_link_libraries(pa_test_sim PUBLIC pa_sim PkgConfig::CMOCKA)
target_include_directories(pa_test_sim PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
pa_add_test(test_sim_kin SOURCES test_sim_kin.c LIBS pa_test_sim TIMEOUT 60 LABELS sim)
pa_add_test(test_sim_collide SOURCES test_sim_collide.c LIBS pa_test_sim TIMEOUT 120 LABELS sim)
pa_add_test(test_sim_laser SOURCES test_sim_laser.c LIBS pa_test_sim TIMEOUT 60 LABELS sim)
pa_add_test(test_sim_run SOURCES test_sim_run.c LIBS pa_test_sim TIMEOUT 60 LABELS sim)
