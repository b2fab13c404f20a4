#!/bin/sh
# The after-a-kernel-change check: the verify suite of bench/device.sh (see there).
exec sh "$(dirname "$0")/device.sh" verify "$@"
