# Launcher tests. test_launch_cli needs only `playarea`; the end-to-end tests
# start the real pa-sim / pa-render / pa-netgw and are added once they exist.
if(TARGET playarea)
  add_library(pa_test_launch_util STATIC test_launch_util.c)
  target_link_libraries(pa_test_launch_util PUBLIC pa_testutil pa_shm pa_util)
  pa_add_test(test_launch_cli SOURCES test_launch_cli.c
              LIBS pa_launch pa_test_launch_util TIMEOUT 60 LABELS launch)
  add_dependencies(test_launch_cli playarea)
  if(TARGET pa-sim AND TARGET pa-netgw)
    set(_pa_launch_procs playarea pa-sim pa-netgw)
    if(TARGET pa-render)
      list(APPEND _pa_launch_procs pa-render)
    endif()
    foreach(t test_launch test_launch_ops test_rss test_netgw_ports)
      if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c)
        pa_add_test(${t} SOURCES ${t}.c
                    LIBS pa_launch pa_test_launch_util TIMEOUT 120 LABELS launch)
        add_dependencies(${t} ${_pa_launch_procs})
      endif()
    endforeach()
    # Every front-end of the table guarded by --token (reaches inside
    # pa-netgw for the table).
    pa_add_test(test_netgw_auth SOURCES test_netgw_auth.c
                LIBS pa_netgw_internal pa_test_launch_util TIMEOUT 120
                LABELS "launch;netgw")
    add_dependencies(test_netgw_auth ${_pa_launch_procs})
    # Seeded chaos: SIGKILL/SIGSTOP of each process under two clients
    # (PA_CHAOS_SEED picks another run; ~40 s). Needs camera frames.
    if(TARGET pa-render)
      pa_add_test(test_chaos SOURCES test_chaos.c
                  LIBS pa_launch pa_test_launch_util Threads::Threads
                  TIMEOUT 240 LABELS "launch;chaos")
      add_dependencies(test_chaos ${_pa_launch_procs})
    endif()
    # Issue 32's attack mixes against one stack for ~60 s (a bystander's
    # pings, pa-netgw's RSS, the watchdog never firing).
    pa_add_test(test_soak SOURCES test_soak.c
                LIBS pa_launch pa_test_launch_util Threads::Threads
                TIMEOUT 150 LABELS "launch;soak")
    add_dependencies(test_soak ${_pa_launch_procs})
  endif()
endif()

# The flag tables vs --help of every program, docs/flags.md and
# docs/CONTRACT.md; README length, doc links, the layout version docs name.
if(TARGET playarea AND TARGET pa-sim AND TARGET pa-netgw)
  pa_add_test(test_flags_docs SOURCES test_flags_docs.c
              LIBS pa_launch pa_sim pa_netgw TIMEOUT 60 LABELS launch)
  add_dependencies(test_flags_docs playarea pa-sim pa-netgw)
  if(TARGET pa-render)
    target_link_libraries(test_flags_docs PRIVATE pa_render)
    target_compile_definitions(test_flags_docs PRIVATE PA_TEST_HAVE_RENDER)
    add_dependencies(test_flags_docs pa-render)
  endif()
endif()
