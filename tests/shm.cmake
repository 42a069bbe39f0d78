# shm/ tests: single-process semantics and pa-shmctl; multi-process (fork).
pa_add_test(test_shm SOURCES test_shm.c LIBS pa_shm m TIMEOUT 60 LABELS shm)
add_dependencies(test_shm pa-shmctl)
pa_add_test(test_shm_mp SOURCES test_shm_mp.c LIBS pa_shm TIMEOUT 120 LABELS shm)
