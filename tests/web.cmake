# Browser tests (issue 18): node drives Debian's chromium through playwright-core
# (tests/web/package.json, `npm ci` by scripts/setup.sh --test-deps) against a real stack
# on OS-picked ports; each test starts and stops its own stack.
find_program(PA_NODE node)
set(PA_CHROMIUM /usr/bin/chromium CACHE FILEPATH "Chromium for the browser tests")
if(NOT PA_NODE OR NOT EXISTS ${PA_CHROMIUM}
   OR NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/web/node_modules/playwright-core)
  message(WARNING "node, ${PA_CHROMIUM} or tests/web/node_modules missing "
                  "(run scripts/setup.sh --test-deps): browser tests disabled")
  return()
endif()

# pa_add_web_test(NAME SCRIPT [TIMEOUT s])
function(pa_add_web_test name script)
  cmake_parse_arguments(T "" "TIMEOUT" "" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 180)
  endif()
  add_test(NAME ${name} COMMAND ${PA_NODE} ${script}
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/web)
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS web
    ENVIRONMENT "PA_BIN_DIR=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};PA_SOURCE_DIR=${CMAKE_SOURCE_DIR};PA_CHROMIUM=${PA_CHROMIUM};LIBGL_ALWAYS_SOFTWARE=1")
endfunction()

pa_add_web_test(web_serve test_serve.mjs)
pa_add_web_test(web_viewer test_viewer.mjs)
pa_add_web_test(web_editor test_editor.mjs)
pa_add_web_test(web_scene test_scene.mjs)
