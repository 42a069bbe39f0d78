# Python client tests (clients/python, examples/). They run with the system
# interpreter, which has Debian's numpy/matplotlib, against the built stack.
set(PA_PYTHON /usr/bin/python3 CACHE FILEPATH "Interpreter for the Python client tests")
if(NOT EXISTS ${PA_PYTHON})
  message(WARNING "${PA_PYTHON} not found: Python client tests disabled")
  return()
endif()

# pa_add_python_test(NAME MODULE [TIMEOUT s])
function(pa_add_python_test name module)
  cmake_parse_arguments(T "" "TIMEOUT" "" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME ${name} COMMAND ${PA_PYTHON} -B -m unittest -v ${module}
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/python)
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS python
    ENVIRONMENT "PYTHONPATH=${CMAKE_SOURCE_DIR}/clients/python:${CMAKE_CURRENT_SOURCE_DIR}/python;PA_BIN_DIR=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};PA_SOURCE_DIR=${CMAKE_SOURCE_DIR};LIBGL_ALWAYS_SOFTWARE=1;PYTHONDONTWRITEBYTECODE=1")
endfunction()

pa_add_python_test(python_frames test_frames TIMEOUT 60)
pa_add_python_test(python_robot_unit test_robot_unit TIMEOUT 90)
pa_add_python_test(python_stack test_stack TIMEOUT 240)
pa_add_python_test(python_examples test_examples TIMEOUT 240)
pa_add_python_test(python_package test_package TIMEOUT 300)
pa_add_python_test(python_env test_env TIMEOUT 120)
pa_add_python_test(python_rl_example test_rl_example TIMEOUT 120)
pa_add_python_test(python_env_dask test_env_dask TIMEOUT 120)
pa_add_python_test(python_env_shm test_env_shm TIMEOUT 120)
pa_add_python_test(python_env_one test_env_one TIMEOUT 120)
pa_add_python_test(python_client_life test_client_life TIMEOUT 240)
pa_add_python_test(python_install_readme test_install_readme TIMEOUT 300)
pa_add_python_test(python_examples_meta test_examples_meta TIMEOUT 60)
