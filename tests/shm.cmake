# shm/ tests: single-process semantics and pa-shmctl; multi-process (fork).
pa_add_test(test_shm SOURCES test_shm.c LIBS pa_shm m TIMEOUT 60 LABELS shm)
add_dependencies(test_shm pa-shmctl)
