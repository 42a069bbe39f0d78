# RL environment tests (clients/python/playarea/env) beyond tests/python.cmake's:
# the step_batch wire the envs use. pa_add_python_test comes from python.cmake.
if(NOT COMMAND pa_add_python_test)
  return()
endif()

pa_add_python_test(python_env_wire test_env_wire TIMEOUT 120)
