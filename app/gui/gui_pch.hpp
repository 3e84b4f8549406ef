#pragma once
// Precompiled header for the GUI files that include the heavy headers (QCustomPlot, which pulls
// in most of Qt Widgets and Print Support, nlohmann/json and QtConcurrent): parsing them was half
// of each such file's 11-23 s cold compile (docs/build.md). app/gui/CMakeLists.txt applies it
// only to those files; for the others, loading it would cost more than it saves.
#include <QtWidgets>
#include <QtConcurrent/QtConcurrentRun>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>
