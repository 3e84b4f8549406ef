#pragma once
// Small decoder shapes for the tests of the torch-free model arithmetic (flops profile, memory
// prediction): every feature of each layout, few elements.

#include "engine/models/model_spec.hpp"

namespace shardscope::testing {

/// GPT-2 with tied embeddings and more learned positions than the sequence.
inline engine::ModelSpec small_gpt2() {
  engine::ModelSpec spec = engine::default_model_spec(engine::ModelKind::kGpt2);
  auto& s = spec.transformer.shape;
  s.layers = 2;
  s.hidden = 64;
  s.heads = 4;
  s.vocab = 1000;
  s.seq_len = 32;
  s.max_positions = 128;
  s.tied_embeddings = true;
  return spec;
}

/// Llama with grouped-query attention (8 heads, 2 kv heads) and an untied head.
inline engine::ModelSpec small_llama() {
  engine::ModelSpec spec = engine::default_model_spec(engine::ModelKind::kLlama);
  auto& s = spec.transformer.shape;
  s.layers = 3;
  s.hidden = 64;
  s.heads = 8;
  s.kv_heads = 2;
  s.ffn = 160;
  s.vocab = 500;
  s.seq_len = 16;
  s.tied_embeddings = false;
  return spec;
}

}  // namespace shardscope::testing
