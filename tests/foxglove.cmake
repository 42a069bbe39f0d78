# Foxglove WebSocket server and MCAP recordings (issue 20): the MCAP writer
# read back by the test's own reader; node tests against a real stack.
pa_add_test(test_mcap SOURCES test_mcap.c LIBS pa_netgw_internal PkgConfig::ZSTD
            TIMEOUT 60 LABELS foxglove)

# Node tests (tests/web, npm ci by scripts/setup.sh): @foxglove/ws-protocol
# and @mcap/core against a real stack on OS-picked ports.
find_program(PA_NODE node)
if(PA_NODE AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/web/node_modules/@mcap/core)
  set(_pa_fox_slow 1)
  if(PA_SANITIZE)
    set(_pa_fox_slow 2)
  elseif(PA_TSAN)
    set(_pa_fox_slow 8)
  endif()
  foreach(t foxglove mcap mcap_lockstep foxglove_scene foxglove_token foxglove_panels
          foxglove_pb)
    add_test(NAME web_${t} COMMAND ${PA_NODE} ${CMAKE_CURRENT_SOURCE_DIR}/web/${t}.mjs
             WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/web)
    set_tests_properties(web_${t} PROPERTIES TIMEOUT 180 LABELS foxglove
      ENVIRONMENT "PA_BIN_DIR=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};LIBGL_ALWAYS_SOFTWARE=1;PA_TEST_SLOW=${_pa_fox_slow}")
  endforeach()
else()
  message(STATUS "node or tests/web/node_modules missing: web_foxglove, web_mcap not registered")
endif()

# replay_mcap of hostile files (issue 32 #6) against the real pa-sim and
# pa-netgw: errors by name, pa-netgw alive, its peak RSS bounded.
pa_add_test(test_mcap_replay SOURCES test_mcap_replay.c
            LIBS pa_shm pa_netgw_internal PkgConfig::ZSTD TIMEOUT 120
            LABELS foxglove)
if(TARGET pa-sim)
  add_dependencies(test_mcap_replay pa-sim pa-netgw)
endif()
