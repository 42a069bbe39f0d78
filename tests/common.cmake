# common/ tests: the modules every process shares.
pa_add_test(test_safefile SOURCES test_safefile.c LIBS pa_util TIMEOUT 30 LABELS common)
# Files the stack writes on a client's request, end to end (issue 32):
# uploads, saves, exports and recordings never leave --data_dir.
pa_add_test(test_files SOURCES test_files.c
            LIBS pa_shm PkgConfig::JANSSON m TIMEOUT 120 LABELS netgw)
if(TARGET pa-sim)
  add_dependencies(test_files pa-sim pa-netgw)
endif()
