/* json_scenario.c - OceanSim's named scenarios: set_scenario {"scenario":
 * NAME, "seed": N} regenerates the map as that built-in scenario
 * (maps/pa_scenario.c; robots are kept, moved off walls), list_scenarios
 * names them. set_scenario {"world": FILE} stays in json_world.c. */
#define _GNU_SOURCE
#include "json_int.h"
#include "pa_map.h"

#include <string.h>

json_t *pa_json_set_scenario_named(jctx *x) {
  const char *name = NULL;
  long long seed = 0;
  if (pa_json_need_str(x, "scenario", 64, &name) < 0 ||
      pa_json_int(x, "seed", 0, 9007199254740991ll, &seed) < 0)
    return NULL;
  if (json_object_get(x->data, "world"))
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "give data.scenario or data.world, not both");
  int id = pa_scenario_find(name);
  if (id < 0) {
    char names[256] = "";
    for (int i = 0; pa_scenario_name(i); i++) {
      strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
      strncat(names, pa_scenario_name(i), sizeof names - strlen(names) - 1);
    }
    return pa_json_fail(x, PA_ERR_INVALID_MESSAGE,
                        "unknown scenario '%s' (built in: %s)", name, names);
  }
  pa_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = PA_OP_GENERATE_MAP;
  cmd.gen_map.seed = (double)seed;
  cmd.gen_map.scenario = id + 1;
  return pa_json_wait_for_sim(x, &cmd, 0);
}

/* What the reply adds for a named scenario: its canonical name and seed. */
void pa_json_scenario_reply(jctx *x, json_t *d) {
  json_t *n = json_object_get(x->data, "scenario");
  int id = json_is_string(n) ? pa_scenario_find(json_string_value(n)) : -1;
  if (id < 0)
    return;
  json_t *seed = json_object_get(x->data, "seed");
  json_object_set_new(d, "scenario", json_string(pa_scenario_name(id)));
  json_object_set_new(
      d, "seed", json_is_integer(seed) ? json_copy(seed) : json_integer(0));
  json_object_set_new(d, "description", json_string(pa_scenario_about(id)));
}

json_t *pa_json_act_list_scenarios(jctx *x) {
  (void)x;
  json_t *list = json_array();
  for (int i = 0; pa_scenario_name(i); i++) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(pa_scenario_name(i)));
    json_object_set_new(o, "description", json_string(pa_scenario_about(i)));
    json_array_append_new(list, o);
  }
  return pa_json_counted("scenarios", list);
}
