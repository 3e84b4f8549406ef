#pragma once
// Which hosts and slots of a hostfile a launch uses, by DeepSpeed's rules (runner.py:
// parse_node_config_list, parse_resource_filter, parse_inclusion_exclusion,
// apply_num_nodes_and_gpus): --include/--exclude NODE_SPEC[@NODE_SPEC...] with
// NODE_SPEC = NAME[:SLOT[,SLOT...]], --num_nodes N (the first N hosts), --num_gpus N (slots 0..N-1
// of every host). The result keeps the hostfile's order, which is the order of the ranks.

#include <stdexcept>
#include <string>
#include <vector>

#include "configs/hostfile.hpp"

namespace shardscope::configs {

/// A --include/--exclude (or hostfile selection) that cannot be honoured; names the flag and fix.
class NodeSelectionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One NODE_SPEC: NAME[:SLOT[,SLOT...]]; no slots means every slot of the host.
struct NodeSpec {
  std::string host;
  std::vector<int> slots;  ///< sorted, without duplicates (DeepSpeed's parse_node_config_list)
};

/// Parses NODE_SPEC[@NODE_SPEC...], e.g. "worker-0@worker-1:0,2"; repeated hosts merge.
/// `flag` names the flag in errors. Throws NodeSelectionError for an empty part or a bad slot.
std::vector<NodeSpec> parse_node_specs(const std::string& text, const std::string& flag);

struct NodeSelectionOptions {
  std::string include;  ///< "" or a NODE_SPEC list
  std::string exclude;  ///< "" or a NODE_SPEC list
  int num_nodes = -1;   ///< -1: not given
  int num_gpus = -1;    ///< -1: not given; slots 0..N-1 on every selected host
};

struct SelectedNode {
  std::string host;
  std::vector<int> slots;  ///< slot (GPU) ids, ascending
};

/// Applies DeepSpeed's rules to the hostfile's pool. Throws NodeSelectionError with DeepSpeed's
/// message (e.g. "Hostname 'x' not found in hostfile", "No slot '4' specified on host 'y'") plus
/// what the hostfile has, and where DeepSpeed would fail later (nothing left to run on, more GPUs
/// asked than a host has) it says so now.
std::vector<SelectedNode> select_nodes(const Hostfile& pool, const NodeSelectionOptions& options);

/// "0,1,3" -> "0-1,3": how messages list slot ids ("none" when empty).
std::string format_slot_ids(const std::vector<int>& ids);

}  // namespace shardscope::configs
