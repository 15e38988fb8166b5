/* sedp model split — a model's embedding tables into cubes, the rest into a dense model. */
#pragma once

/* The `sedp model split` subcommand (argv[0] is "split"); returns the exit status. */
int sedp_cmd_model_split (int argc, char **argv);
