# bench-netgw: lockstep step round trips, odom frame age and fan-out, with
# the real pa-sim and pa-netgw (started from the same bin directory).
if(TARGET pa_testutil)
  add_executable(bench-netgw ${CMAKE_CURRENT_SOURCE_DIR}/bench_netgw.c)
  target_include_directories(bench-netgw PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(bench-netgw PRIVATE pa_testutil pa_shm pa_util m)
  if(TARGET pa-sim)
    add_dependencies(bench-netgw pa-sim pa-netgw)
  endif()
endif()
