# The Player 3 front-end (netgw/player/, docs/player.md): the test's own
# Player-protocol client against a real stack.
if(COMMAND pa_add_python_test)
  pa_add_python_test(python_player test_player TIMEOUT 180)
endif()
