#pragma once
// Precompiled header for every engine translation unit and the engine tests: LibTorch's umbrella
// header costs ~15 s per file on a 2-core machine without it.
#include <torch/torch.h>
