# SSL tests: the ball's physics driven directly (cmocka), and the stack
# played as an SSL team through JSON (Python).
pa_add_test(test_sim_ball SOURCES test_sim_ball.c LIBS pa_test_sim pa_sim_internal TIMEOUT 60 LABELS ssl sim)
pa_add_python_test(python_ssl_json test_ssl_json TIMEOUT 120)
set_tests_properties(python_ssl_json PROPERTIES LABELS "python;ssl")
pa_add_python_test(python_ssl_proto test_ssl_proto TIMEOUT 120)
set_tests_properties(python_ssl_proto PROPERTIES LABELS "python;ssl")
# An SSL UDP flood leaves JSON clients room in the command queue (issue 32).
pa_add_python_test(python_ssl_flood test_ssl_flood TIMEOUT 120)
set_tests_properties(python_ssl_flood PROPERTIES LABELS "python;ssl")
pa_add_python_test(python_ssl_restart test_ssl_restart TIMEOUT 120)
set_tests_properties(python_ssl_restart PROPERTIES LABELS "python;ssl")
if(TARGET pa_render)
  pa_add_test(test_render_ssl SOURCES test_render_ssl.c LIBS pa_render pa_map m
              TIMEOUT 60 LABELS ssl render)
endif()
pa_add_python_test(python_ssl_scenario test_ssl_scenario TIMEOUT 120)
set_tests_properties(python_ssl_scenario PROPERTIES LABELS "python;ssl")
if(TARGET pa-render)
  pa_add_python_test(python_ssl_camera test_ssl_camera TIMEOUT 120)
  set_tests_properties(python_ssl_camera PROPERTIES LABELS "python;ssl;render")
endif()
