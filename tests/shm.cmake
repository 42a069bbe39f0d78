# shm/ tests: single-process semantics and pa-shmctl; multi-process (fork).
pa_add_test(test_shm SOURCES test_shm.c LIBS pa_shm m TIMEOUT 60 LABELS shm)
add_dependencies(test_shm pa-shmctl)
pa_add_test(test_shm_mp SOURCES test_shm_mp.c LIBS pa_shm TIMEOUT 120 LABELS shm)
# A scan as sectors (shm/pa_obs.c) against the rule beam by beam, here and
# cross-built for AArch64 under qemu-user (its NEON path; skipped, exit 77,
# without the cross compiler or qemu: scripts/setup.sh --test-deps).
pa_add_test(test_obs_sectors SOURCES test_obs_sectors.c LIBS pa_shm m TIMEOUT 60 LABELS shm)
add_test(NAME test_obs_sectors_aarch64
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/obs_cross.sh ${CMAKE_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/obs_aarch64)
set_tests_properties(test_obs_sectors_aarch64 PROPERTIES SKIP_RETURN_CODE 77
                     TIMEOUT 300 LABELS shm)
