# Foxglove WebSocket server and MCAP recordings (issue 20): the MCAP writer
# read back by the test's own reader; node tests against a real stack.
pa_add_test(test_mcap SOURCES test_mcap.c LIBS pa_netgw PkgConfig::ZSTD
            TIMEOUT 60 LABELS foxglove)
