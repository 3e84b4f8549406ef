#pragma once
// Where the GUI finds the `shardscope` CLI it runs for engine work (it never links LibTorch).

#include <QString>

namespace shardscope::gui {

/// $SHARDSCOPE_CLI if set, else `shardscope` beside this executable, else `shardscope` on PATH.
QString shardscope_cli_path();

}  // namespace shardscope::gui
