/* sedp model pack, verify, keygen, sign — model bundles (docs/model-lifecycle.md). */
#pragma once

/* Each gets the subcommand's arguments (argv[0] is its name) and returns the exit status: 0,
 * 1 when the bundle, key or source is refused or cannot be written, 2 for bad arguments
 * (pack: 130 when interrupted). */
int sedp_cmd_model_pack (int argc, char **argv);
int sedp_cmd_model_verify (int argc, char **argv);
int sedp_cmd_model_keygen (int argc, char **argv);
int sedp_cmd_model_sign (int argc, char **argv);
