/* sedp — visibility and helper macros shared by the SDK headers. */
#pragma once

#include <glib.h>

/**
 * SEDP_API:
 * Marks a function exported by libsedp. Everything else in libsedp has hidden visibility.
 */
#if defined(__GNUC__)
#define SEDP_API __attribute__((visibility("default")))
#else
#define SEDP_API
#endif

/**
 * SEDP_PLUGIN_EXPORT:
 * Marks the one symbol a plugin exports: its stage descriptor (see SEDP_STAGE_DEFINE()).
 */
#if defined(__GNUC__)
#define SEDP_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define SEDP_PLUGIN_EXPORT
#endif

/**
 * SEDP_PADDING:
 * Number of reserved pointer-sized slots at the end of public structs, so that fields can be
 * added in a minor ABI version without changing their size.
 */
#define SEDP_PADDING 8
