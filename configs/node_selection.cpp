#include "configs/node_selection.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace shardscope::configs {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (text.empty() || text.back() == separator) parts.emplace_back();
  return parts;
}

int parse_slot(const std::string& text, const std::string& flag, const std::string& spec) {
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || text.size() > 6)
    throw NodeSelectionError(flag + " " + spec + ": '" + text +
                             "' is not a slot (GPU) index; write NAME:SLOT[,SLOT...], e.g. worker-1:0,2");
  return std::stoi(text);
}

std::vector<int> all_slots(int count) {
  std::vector<int> slots(static_cast<std::size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i) slots[static_cast<std::size_t>(i)] = i;
  return slots;
}

std::string host_list(const Hostfile& pool) {
  std::string text;
  for (const auto& h : pool.hosts) text += (text.empty() ? "" : ", ") + h.host;
  return text;
}

const HostfileEntry& known_host(const Hostfile& pool, const std::string& host, const std::string& flag) {
  const HostfileEntry* entry = pool.find(host);
  if (!entry)
    throw NodeSelectionError(flag + ": Hostname '" + host + "' not found in hostfile " + pool.path + " (it has " +
                             host_list(pool) + ")");
  return *entry;
}

void check_slot(const HostfileEntry& entry, int slot, const std::string& flag) {
  if (slot >= entry.slot_count)
    throw NodeSelectionError(flag + ": No slot '" + std::to_string(slot) + "' specified on host '" + entry.host +
                             "' (its hostfile line " + std::to_string(entry.line) + " gives slots=" +
                             std::to_string(entry.slot_count) + ": slots " + format_slot_ids(all_slots(entry.slot_count)) + ")");
}

// parse_resource_filter: build from the include list, or remove the exclude list from the pool.
std::map<std::string, std::vector<int>> filter_pool(const Hostfile& pool, const NodeSelectionOptions& o) {
  std::map<std::string, std::vector<int>> kept;
  const bool including = !o.include.empty();
  const std::string flag = including ? "--include" : "--exclude";
  if (!including)
    for (const auto& h : pool.hosts) kept[h.host] = all_slots(h.slot_count);
  for (const auto& spec : parse_node_specs(including ? o.include : o.exclude, flag)) {
    const HostfileEntry& entry = known_host(pool, spec.host, flag);
    for (int slot : spec.slots) check_slot(entry, slot, flag);
    auto& slots = kept[spec.host];
    if (including) {
      slots = spec.slots.empty() ? all_slots(entry.slot_count) : spec.slots;
    } else if (spec.slots.empty()) {
      slots.clear();
    } else {
      for (int slot : spec.slots) slots.erase(std::remove(slots.begin(), slots.end(), slot), slots.end());
    }
  }
  return kept;
}

}  // namespace

std::vector<NodeSpec> parse_node_specs(const std::string& text, const std::string& flag) {
  std::vector<NodeSpec> specs;
  for (const auto& part : split(text, '@')) {
    const auto colon = part.find(':');
    NodeSpec spec;
    spec.host = part.substr(0, colon);
    if (spec.host.empty())
      throw NodeSelectionError(flag + " '" + text +
                               "': a NODE_SPEC has no host name; write NAME[:SLOT[,SLOT...]], e.g. worker-1:0,2");
    if (colon != std::string::npos) {
      std::set<int> slots;
      for (const auto& slot : split(part.substr(colon + 1), ',')) slots.insert(parse_slot(slot, flag, part));
      spec.slots.assign(slots.begin(), slots.end());
    }
    // DeepSpeed merges repeated hosts ("worker-0:0@worker-0:1").
    auto same = std::find_if(specs.begin(), specs.end(), [&](const NodeSpec& s) { return s.host == spec.host; });
    if (same == specs.end()) {
      specs.push_back(spec);
    } else {
      std::set<int> merged(same->slots.begin(), same->slots.end());
      merged.insert(spec.slots.begin(), spec.slots.end());
      same->slots.assign(merged.begin(), merged.end());
    }
  }
  return specs;
}

std::vector<SelectedNode> select_nodes(const Hostfile& pool, const NodeSelectionOptions& o) {
  if (!o.include.empty() && !o.exclude.empty())
    throw NodeSelectionError("--include and --exclude are mutually exclusive (as in DeepSpeed): give one of them");
  if ((o.num_nodes >= 0 || o.num_gpus >= 0) && (!o.include.empty() || !o.exclude.empty()))
    throw NodeSelectionError("Cannot specify num_nodes/gpus with include/exclude: --num_nodes and --num_gpus pick "
                             "the first hosts and slots, --include/--exclude name them; use one way");
  if (o.num_nodes == 0 || o.num_gpus == 0)
    throw NodeSelectionError(std::string(o.num_nodes == 0 ? "--num_nodes" : "--num_gpus") + " must be at least 1");
  std::vector<SelectedNode> selected;
  if (o.include.empty() && o.exclude.empty()) {
    for (const auto& h : pool.hosts) selected.push_back({h.host, all_slots(h.slot_count)});
  } else {
    const auto kept = filter_pool(pool, o);
    for (const auto& h : pool.hosts)  // the hostfile's order maps ranks to hosts
      if (auto it = kept.find(h.host); it != kept.end() && !it->second.empty()) selected.push_back({h.host, it->second});
  }
  if (o.num_nodes > 0 && static_cast<std::size_t>(o.num_nodes) < selected.size()) selected.resize(static_cast<std::size_t>(o.num_nodes));
  if (o.num_gpus > 0)
    for (auto& node : selected) {
      const HostfileEntry& entry = *pool.find(node.host);
      if (o.num_gpus > entry.slot_count)
        throw NodeSelectionError("--num_gpus " + std::to_string(o.num_gpus) + ": host '" + entry.host + "' has slots=" +
                                 std::to_string(entry.slot_count) + " (" + pool.path + " line " + std::to_string(entry.line) +
                                 "); ask for at most " + std::to_string(entry.slot_count) + " or fix the hostfile");
      node.slots = all_slots(o.num_gpus);
    }
  if (selected.empty())
    throw NodeSelectionError((o.exclude.empty() ? std::string("the hostfile ") + pool.path + " gives no slot"
                                                : "--exclude " + o.exclude + " leaves no slot") +
                             " to run on; every selected host needs slots=N with N >= 1");
  return selected;
}

std::string format_slot_ids(const std::vector<int>& ids) {
  std::string text;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text += std::to_string(ids[i]);
    if (j > i) text += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return text.empty() ? "none" : text;
}

}  // namespace shardscope::configs
