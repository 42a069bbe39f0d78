# common/ tests: the modules every process shares.
pa_add_test(test_safefile SOURCES test_safefile.c LIBS pa_util TIMEOUT 30 LABELS common)
