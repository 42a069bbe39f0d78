# OceanSim v2 and Player compatibility end to end (issue 16): the real pa-sim
# and pa-netgw driven as those clients do; the READMEs' Python examples run.
pa_add_test(test_compat SOURCES test_compat.c
            LIBS pa_shm PkgConfig::JANSSON m TIMEOUT 120 LABELS netgw)
if(TARGET pa-sim)
  add_dependencies(test_compat pa-sim pa-netgw)
endif()
if(COMMAND pa_add_python_test)
  pa_add_python_test(python_doc_examples test_doc_examples TIMEOUT 180)
endif()
pa_add_test(test_map_scenario SOURCES test_map_scenario.c LIBS pa_map
            TIMEOUT 60 LABELS map)
# export_dataset as OceanSim's (export_dir, render_image, pack_dataset): the
# whole stack with pa-render; files, archive and PNGs checked from Python.
if(COMMAND pa_add_python_test)
  pa_add_python_test(python_dataset test_dataset TIMEOUT 180)
endif()
# Every example of OceanSim's protocol v2 text, sent as its users send it to
# a stack started as docs/oceansim.md says (issue 39).
if(COMMAND pa_add_python_test)
  pa_add_python_test(python_oceansim_seed test_oceansim_seed TIMEOUT 240)
endif()
