# RaisimServer's side (issue 19): port walking, discovery beacon, hibernate.
if(TARGET playarea AND TARGET pa-sim AND TARGET pa-netgw AND TARGET pa_test_launch_util)
  pa_add_test(test_raisim SOURCES test_raisim.c
              LIBS pa_test_launch_util TIMEOUT 90 LABELS "raisim;launch")
  add_dependencies(test_raisim playarea pa-sim pa-netgw)
endif()
