# netgw/ tests: the parser, frames and camera path as modules (in-process
# gateway on a test instance), and end to end with the real pa-sim.
pa_add_test(test_netgw SOURCES test_netgw.c LIBS pa_netgw_internal TIMEOUT 60
            LABELS netgw)
pa_add_test(test_netgw_e2e SOURCES test_netgw_e2e.c
            LIBS pa_shm pa_map PkgConfig::JANSSON m Threads::Threads TIMEOUT 120
            LABELS netgw)
if(TARGET pa-sim)
  add_dependencies(test_netgw_e2e pa-sim pa-netgw)
endif()
if(TARGET pa-render)
  add_dependencies(test_netgw_e2e pa-render)
endif()
pa_add_test(test_netgw_robust SOURCES test_netgw_robust.c
            LIBS pa_shm Threads::Threads TIMEOUT 120 LABELS netgw)
if(TARGET pa-sim)
  add_dependencies(test_netgw_robust pa-sim pa-netgw)
endif()
if(TARGET playarea)
  add_dependencies(test_netgw_robust playarea)
endif()
# The WebSocket layer (ws.c) over a socket pair: the web viewer's /ws and the
# Foxglove server both stand on it.
pa_add_test(test_ws SOURCES test_ws.c LIBS pa_netgw_internal PkgConfig::EVENT
            TIMEOUT 30 LABELS netgw)
# The request line's parse (json_lex.c) against json_loadb, line by line.
pa_add_test(test_netgw_lex SOURCES test_netgw_lex.c LIBS pa_netgw_internal
            TIMEOUT 60 LABELS netgw)
# The step reply's numbers (json_fast.c) against jansson's and the old
# range format, byte for byte.
pa_add_test(test_netgw_fmt SOURCES test_netgw_fmt.c LIBS pa_netgw_internal
            TIMEOUT 120 LABELS netgw)
# The step reply written with no tree equals the tree's, on a real stack;
# the loop's watch for the next STEP ends when the client goes quiet.
pa_add_test(test_netgw_step_fast SOURCES test_netgw_step_fast.c
            LIBS pa_shm pa_util PkgConfig::JANSSON Threads::Threads TIMEOUT 60
            LABELS netgw)
if(TARGET pa-sim)
  add_dependencies(test_netgw_step_fast pa-sim pa-netgw)
endif()
# The core's connection limits (issue 32): each attack against a real stack
# while a bystander pings; RSS and the bystander's p99 bounded.
pa_add_test(test_netgw_limits SOURCES test_netgw_limits.c
            LIBS pa_shm Threads::Threads TIMEOUT 180 LABELS netgw)
if(TARGET pa-sim)
  add_dependencies(test_netgw_limits pa-sim pa-netgw)
endif()
# pa-netgw's layout (docs/netgw.md): no front-end reaching into another, no
# file over 800 lines, no function over 120, read from the sources and the
# pa_netgw objects (ctest runs after the build).
add_test(NAME netgw_layout COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/check_netgw_layout.py ${CMAKE_BINARY_DIR})
set_tests_properties(netgw_layout PROPERTIES TIMEOUT 60 LABELS netgw)
# The browser port's findings of issue 32: half-closed HTTP requests, /ws
# heads that never end, visual objects as deltas.
pa_add_test(test_web_limits SOURCES test_web_limits.c
            LIBS pa_shm Threads::Threads TIMEOUT 120 LABELS netgw)
if(TARGET pa-sim)
  add_dependencies(test_web_limits pa-sim pa-netgw)
endif()
