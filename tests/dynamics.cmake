# Dynamic bodies and forces (issue 15): the sim core against closed forms,
# and the JSON actions end to end with the real pa-sim and pa-netgw.
pa_add_test(test_dynamics SOURCES test_dynamics.c LIBS pa_test_sim TIMEOUT 60
            LABELS dynamics)
pa_add_test(test_dynamics_net SOURCES test_dynamics_net.c
            LIBS pa_shm pa_map PkgConfig::JANSSON m TIMEOUT 60 LABELS dynamics)
if(TARGET pa-sim)
  add_dependencies(test_dynamics_net pa-sim pa-netgw)
endif()
pa_add_test(test_dynamics_agents SOURCES test_dynamics_agents.c
            LIBS pa_test_sim pa_sim_internal PkgConfig::JANSSON TIMEOUT 120 LABELS dynamics)
if(COMMAND pa_add_python_test)
  pa_add_python_test(python_dynamics test_dynamics TIMEOUT 120)
endif()
# Nothing lost when pa-sim crashes: held forces and agents under the launcher.
if(TARGET pa_test_launch_util AND DEFINED _pa_launch_procs)
  pa_add_test(test_dynamics_restart SOURCES test_dynamics_restart.c
              LIBS pa_launch pa_test_launch_util PkgConfig::JANSSON m
              TIMEOUT 90 LABELS "dynamics;launch")
  add_dependencies(test_dynamics_restart ${_pa_launch_procs})
endif()
# Every property of every body through every save path (issue 33): the
# snapshot file, the shm snapshot across a pa-sim crash, save_world; an old
# snapshot file (tests/fixtures/) still loads.
if(TARGET pa_test_launch_util AND DEFINED _pa_launch_procs)
  pa_add_test(test_props_persist SOURCES test_props_persist.c
              LIBS pa_launch pa_test_launch_util pa_map PkgConfig::JANSSON m
              TIMEOUT 120 LABELS "dynamics;launch")
  add_dependencies(test_props_persist ${_pa_launch_procs})
endif()
