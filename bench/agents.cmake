# bench-agents: real-time factor with 10 robots and 100 / 1000 agents.
add_executable(bench-agents bench_agents.c)
target_link_libraries(bench-agents PRIVATE pa_sim pa_util)
