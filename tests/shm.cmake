# shm/ tests: single-process semantics, multi-process (fork), pa-shmctl.
pa_add_test(test_shm SOURCES test_shm.c LIBS pa_shm TIMEOUT 60 LABELS shm)
