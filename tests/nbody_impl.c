/* nbody_impl.c - the implementation alone, one object a build that the test programs which
   use only the public API link (the Makefile's LINKED_TESTS; docs/platforms.md) */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
