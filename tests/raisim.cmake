# RaisimServer's side (issue 19): port walking, discovery beacon, hibernate.
if(TARGET playarea AND TARGET pa-sim AND TARGET pa-netgw AND TARGET pa_test_launch_util)
  pa_add_test(test_raisim SOURCES test_raisim.c
              LIBS pa_test_launch_util TIMEOUT 90 LABELS "raisim;launch")
  add_dependencies(test_raisim playarea pa-sim pa-netgw)
endif()
if(TARGET playarea AND TARGET pa-sim AND TARGET pa-netgw AND TARGET pa-render
   AND TARGET pa_test_launch_util)
  pa_add_test(test_raisim_visual SOURCES test_raisim_visual.c
              LIBS pa_test_launch_util pa_map PkgConfig::PA_TEST_STB
                   PkgConfig::JANSSON m
              TIMEOUT 180 LABELS "raisim;render")
  add_dependencies(test_raisim_visual playarea pa-sim pa-netgw pa-render)
  # thousands of random visual requests against a model (issue 38)
  pa_add_test(test_raisim_visual_pool SOURCES test_raisim_visual_pool.c
              LIBS pa_test_launch_util PkgConfig::PA_TEST_STB
                   PkgConfig::JANSSON m
              TIMEOUT 240 LABELS "raisim;render")
  add_dependencies(test_raisim_visual_pool playarea pa-sim pa-netgw pa-render)
  # screenshots and videos with `playarea --viewer` (Xvfb it starts itself)
  pa_add_python_test(python_viewer_spectator test_viewer_spectator TIMEOUT 120)
  set_tests_properties(python_viewer_spectator PROPERTIES LABELS "python;raisim;render")
  # a video that survives kill -9 of pa-render (fragmented MP4, ffprobe)
  pa_add_test(test_raisim_video SOURCES test_raisim_video.c
              LIBS pa_test_launch_util PkgConfig::JANSSON
              TIMEOUT 120 LABELS "raisim;render")
  add_dependencies(test_raisim_video playarea pa-sim pa-netgw pa-render)
endif()
# mesh (OBJ, STL, PLY, arrays), height-map and instanced visuals, solid and
# lit, in the spectator's screenshots (issue 38)
if(TARGET playarea AND TARGET pa-sim AND TARGET pa-netgw AND TARGET pa-render
   AND TARGET pa_test_launch_util)
  pa_add_test(test_raisim_visual_mesh SOURCES test_raisim_visual_mesh.c
              LIBS pa_test_launch_util PkgConfig::PA_TEST_STB
                   PkgConfig::JANSSON m
              TIMEOUT 180 LABELS "raisim;render")
  add_dependencies(test_raisim_visual_mesh playarea pa-sim pa-netgw pa-render)
endif()
