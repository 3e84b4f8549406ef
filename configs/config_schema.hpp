#pragma once
// Internal: DeepSpeed's config schema (0.19.7's, and 0.19.8's differences) as data: every block, whether DeepSpeed validates it
// strictly (pydantic, extra="forbid") or reads it leniently (get_scalar_param, unknown keys
// ignored), and every key with its type, code default, alias and allowed range. The key checks,
// the resolver and the resolved view all walk these tables, so a key is described once.

#include <optional>
#include <string>
#include <vector>

#include "configs/deepspeed_version.hpp"

namespace shardscope::configs {

enum class FieldType {
  kBool,
  kInt,         ///< pydantic int: an integral float such as 5e8 is accepted
  kNumber,
  kString,
  kStringList,
  kObject,      ///< a free-form object (checked elsewhere or passed through)
  kAny,
};

struct FieldSpec {
  std::string name;              ///< the documented key, e.g. "stage3_prefetch_bucket_size"
  FieldType type = FieldType::kAny;
  std::string default_json;      ///< DeepSpeed's code default as JSON text; "null" = None
  std::string alias;             ///< interchangeable name (populate_by_name), e.g. "prefetch_bucket_size"
  std::optional<double> min;     ///< inclusive
  std::optional<double> max;     ///< inclusive
  std::vector<std::string> choices;  ///< allowed strings (compared case-insensitively)
  bool nullable = false;         ///< null is a valid value
  bool min_exclusive = false;    ///< pydantic gt= rather than ge= (reduce_bucket_size: gt=0)
};

struct BlockSpec {
  std::string path;              ///< "" = top level, else dotted ("zero_optimization.offload_param")
  bool strict = false;           ///< pydantic extra="forbid": unknown keys are errors, "auto" dropped
  bool listed_when_absent = true;///< resolved view shows its defaults even if the block is absent
  std::vector<FieldSpec> fields;
  std::vector<std::string> other_keys;  ///< known keys handled elsewhere (sub-blocks, removed, ...)
};

/// Every block of the schema of that DeepSpeed release, parents before children.
const std::vector<BlockSpec>& config_blocks(DeepSpeedVersion version = DeepSpeedVersion::k0_19_7);

/// The block with this dotted path, or nullptr.
const BlockSpec* find_block(const std::string& path);

/// The field named `key` (or aliased so) in `block`, or nullptr.
const FieldSpec* find_field(const BlockSpec& block, const std::string& key);

/// All key names a block knows (fields, aliases and other keys), for "did you mean".
std::vector<std::string> known_keys(const BlockSpec& block);

}  // namespace shardscope::configs
