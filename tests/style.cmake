# The C lines added since .clang-format came in are formatted (a check that
# reads the git history; outside a git checkout it passes and says why).
add_test(NAME style_format COMMAND ${CMAKE_SOURCE_DIR}/scripts/format-check.sh)
set_tests_properties(style_format PROPERTIES TIMEOUT 60 LABELS style)
