#include "engine/gathered_parameters.hpp"

#include <iostream>

#include "engine/engine.hpp"

namespace shardscope::engine {

GatheredParameters::GatheredParameters(Engine& engine, std::optional<int> modifier_rank)
    : engine_(engine), modifier_rank_(modifier_rank) {
  if (modifier_rank_ && (*modifier_rank_ < 0 || *modifier_rank_ >= engine_.world_size()))
    throw std::invalid_argument("GatheredParameters: modifier rank " + std::to_string(*modifier_rank_) +
                                " is not a rank of this world of " + std::to_string(engine_.world_size()));
  engine_.zero().gather_all();
}

GatheredParameters::~GatheredParameters() {
  try {
    close();
  } catch (const std::exception& e) {
    std::cerr << "GatheredParameters: " << e.what() << std::endl;
  }
}

void GatheredParameters::close() {
  if (!open_) return;
  open_ = false;
  if (modifier_rank_) {
    engine_.zero().scatter_from_gathered(*modifier_rank_);
    engine_.refresh_master_from_weights();
  }
  engine_.zero().release_all();
}

}  // namespace shardscope::engine
