#!/bin/bash
# The GUI's `shardscope` for gui_launch_multihost_test: the real CLI run on host 1 of the test's
# network namespaces (SS_GUI_NETNS names it), so the launcher reaches the other hosts over their
# own network while the GUI itself stays outside.
# usage (as $SHARDSCOPE_CLI): cli_in_netns.sh ARGS...   with SS_GUI_NETNS and SS_GUI_CLI set
set -euo pipefail
exec /usr/sbin/ip netns exec "$SS_GUI_NETNS" "$SS_GUI_CLI" "$@"
