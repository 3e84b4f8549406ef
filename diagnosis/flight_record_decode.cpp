// Decoding one rank's flight recorder dump (flight_record.hpp): the pickle (or JSON) as a JSON
// value, then its fields checked one by one into CollectiveMarks.
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>

#include <nlohmann/json.hpp>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/pickle_reader.hpp"
#include "diagnosis/flight_record.hpp"
#include "sessions/import/import_error.hpp"

namespace shardscope::diagnosis {
namespace {

using nlohmann::json;
using sessions::ImportError;
using checkpoints::PickleKind;

constexpr int kMaxDepth = 16;  // a dump nests 5 deep (entries[i].frames[j].name)

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw ImportError(file + ": " + what);
}

// The pickle as JSON. The tree may share a value many times (the memo), so a budget of values
// bounds the copy: a real dump shares only strings, so its copy is as large as its references.
struct PickleToJson {
  const checkpoints::PickleTree& tree;
  const std::string& file;
  std::size_t budget;

  json convert(checkpoints::NodeId id, int depth) {
    if (depth > kMaxDepth) fail(file, "nested deeper than " + std::to_string(kMaxDepth) + " levels: not a flight recorder dump");
    if (budget-- == 0) fail(file, "shares its values too often to be a flight recorder dump (a pickle bomb?)");
    const auto& n = tree.node(id);
    switch (n.kind) {
      case PickleKind::kNone: return nullptr;
      case PickleKind::kBool: return n.boolean;
      case PickleKind::kInt: return n.integer;
      case PickleKind::kFloat: return n.real;
      case PickleKind::kString: return n.text;
      case PickleKind::kList: case PickleKind::kTuple: case PickleKind::kSet: return array(n, depth);
      case PickleKind::kDict: return object(n, depth);
      default: fail(file, "holds a " + checkpoints::kind_name(tree, id) + ", which a flight recorder dump never does");
    }
  }
  json array(const checkpoints::PickleNode& n, int depth) {
    json out = json::array();
    for (auto item : n.items) out.push_back(convert(item, depth + 1));
    return out;
  }
  json object(const checkpoints::PickleNode& n, int depth) {
    json out = json::object();
    for (std::size_t i = 0; i + 1 < n.items.size(); i += 2) {
      const auto& key = tree.node(n.items[i]);
      if (key.kind != PickleKind::kString && key.kind != PickleKind::kInt)
        fail(file, "has a dict key of type " + checkpoints::kind_name(tree, n.items[i]) + " (a dump's keys are str)");
      out[key.kind == PickleKind::kString ? key.text : std::to_string(key.integer)] = convert(n.items[i + 1], depth + 1);
    }
    return out;
  }
};

json parse_dump(const std::string& bytes, const std::string& file, std::string& format) {
  if (!bytes.empty() && bytes[0] == '{') {
    format = "json";
    json value = json::parse(bytes, nullptr, false);
    if (value.is_discarded()) fail(file, "starts with '{' but is not JSON (a damaged _dump_fr_trace_json file?)");
    return value;
  }
  format = "pickle";
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x80)
    fail(file, "is not a pickle (no PROTO opcode at its start): not a flight recorder dump");
  try {
    const auto tree = checkpoints::read_pickle(bytes.data(), bytes.size(), file);
    PickleToJson converter{tree, file, 4 * tree.size() + 1024};
    return converter.convert(tree.root(), 0);
  } catch (const checkpoints::CheckpointError& e) {
    throw ImportError(std::string(e.what()) + " (a flight recorder dump cut short or damaged?)");
  }
}

// Typed access with the entry's path in every complaint.
struct Fields {
  const json& value;
  const std::string& file;
  std::string path;

  const json& at(const std::string& key) const {
    if (!value.is_object()) fail(file, path + " is not a dict");
    const auto it = value.find(key);
    if (it == value.end()) fail(file, path + " has no '" + key + "': not a flight recorder dump of format 2.x");
    return *it;
  }
  const json* find(const std::string& key) const {
    const auto it = value.find(key);
    return it == value.end() || it->is_null() ? nullptr : &*it;
  }
  std::int64_t integer(const std::string& key) const {
    const json& v = at(key);
    if (v.is_number_integer()) return v.get<std::int64_t>();
    if (v.is_string()) {  // the JSON dump writes pg_status's numbers as text
      const std::string& s = v.get_ref<const std::string&>();
      char* end = nullptr;
      const long long n = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && *end == '\0') return n;
    }
    fail(file, path + "." + key + " is not an integer");
  }
  const std::string& text(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(file, path + "." + key + " is not a str");
    return v.get_ref<const std::string&>();
  }
};

// Bytes of one element of a c10 ScalarType as the recorder names it; 0 when unknown.
std::int64_t element_bytes(const std::string& dtype) {
  static const std::map<std::string, std::int64_t> sizes{
      {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Int", 4}, {"Long", 8}, {"Short", 2},
      {"Char", 1}, {"Byte", 1}, {"Bool", 1}, {"ComplexFloat", 8}, {"ComplexDouble", 16}, {"ComplexHalf", 4},
      {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"Float8_e4m3fnuz", 1}, {"Float8_e5m2fnuz", 1}, {"UInt16", 2},
      {"UInt32", 4}, {"UInt64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

std::int64_t input_bytes(const Fields& e) {
  const json& sizes = e.at("input_sizes");
  const json* dtypes = e.find("input_dtypes");
  if (!sizes.is_array()) fail(e.file, e.path + ".input_sizes is not a list");
  std::int64_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::int64_t numel = 1;
    if (!sizes[i].is_array()) fail(e.file, e.path + ".input_sizes[" + std::to_string(i) + "] is not a shape");
    for (const auto& d : sizes[i]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || __builtin_mul_overflow(numel, d.get<std::int64_t>(), &numel))
        fail(e.file, e.path + ".input_sizes[" + std::to_string(i) + "] is not a shape of sizes below 2^63");
    }
    const bool typed = dtypes && dtypes->is_array() && i < dtypes->size() && (*dtypes)[i].is_string();
    const std::int64_t width = typed ? element_bytes((*dtypes)[i].get<std::string>()) : 0;
    if (__builtin_mul_overflow(numel, width, &numel) || __builtin_add_overflow(total, numel, &total))
      fail(e.file, e.path + ".input_sizes adds up to more than 2^63 bytes");
  }
  return total;
}

std::string first_dtype(const Fields& e) {
  const json* dtypes = e.find("input_dtypes");
  return dtypes && dtypes->is_array() && !dtypes->empty() && (*dtypes)[0].is_string() ? (*dtypes)[0].get<std::string>() : "";
}

// Where the rank's own code issued it: the innermost frame outside torch.
std::string issuing_frame(const Fields& e) {
  const json* frames = e.find("frames");
  if (!frames || !frames->is_array()) return "";
  for (const auto& frame : *frames) {
    if (!frame.is_object()) continue;
    const auto file = frame.value("filename", std::string());
    if (file.empty() || file.find("/torch/") != std::string::npos) continue;
    const auto line = frame.contains("line") && frame["line"].is_number_integer() ? frame["line"].get<std::int64_t>() : 0;
    return file.substr(file.find_last_of('/') + 1) + ":" + std::to_string(line) + " in " + frame.value("name", std::string("?"));
  }
  return "";
}

std::string group_name(const Fields& e) {
  const json& pg = e.at("process_group");
  if (!pg.is_array() || pg.size() != 2 || !pg[0].is_string() || !pg[1].is_string())
    fail(e.file, e.path + ".process_group is not a (name, description) pair");
  const auto& name = pg[0].get_ref<const std::string&>();
  const auto& desc = pg[1].get_ref<const std::string&>();
  return desc.empty() || desc == "undefined" ? "pg " + name : desc + " (pg " + name + ")";
}

std::optional<double> seconds_of(const json* ns) {
  if (!ns || !ns->is_number_integer() || ns->get<std::int64_t>() <= 0) return std::nullopt;  // JSON writes 0 for none
  return static_cast<double>(ns->get<std::int64_t>()) / 1e9;
}

sessions::CollectiveMark decode_entry(const Fields& e, int rank) {
  sessions::CollectiveMark m;
  m.rank = rank;
  m.group = group_name(e);
  m.sequence = e.integer("collective_seq_id");
  const std::string& name = e.text("profiling_name");
  m.op = name.substr(name.find(':') == std::string::npos ? 0 : name.find(':') + 1);
  m.bytes = input_bytes(e);
  m.dtype = first_dtype(e);
  m.step = -1;
  m.tag = issuing_frame(e);
  const auto created = e.integer("time_created_ns");
  m.entered_at = static_cast<double>(created) / 1e9;
  const json* retired = e.find("retired");
  if (e.text("state") == "completed" || (retired && retired->is_boolean() && retired->get<bool>()))
    m.left_at = seconds_of(e.find("time_discovered_completed_ns")).value_or(m.entered_at);
  return m;
}

bool is_point_to_point(const Fields& e) {
  const json* p2p = e.find("is_p2p");
  return p2p && p2p->is_boolean() && p2p->get<bool>();
}

void check_version(const std::string& version, const std::string& file) {
  if (version.rfind("2.", 0) != 0 || version.size() < 3 ||
      !std::all_of(version.begin() + 2, version.end(), [](unsigned char c) { return std::isdigit(c); }))
    fail(file, "is a flight recorder dump of format '" + version + "'; this reader knows format 2.x (PyTorch 2.11 "
               "writes 2.10). Read it with torch's `python -m torch.distributed.flight_recorder.fr_trace`.");
}

// pg_config: {name: {desc, ranks: "[0, 1]"}}: the members of each named group (NCCL records them;
// gloo in 2.11 records one entry named "").
void read_groups(const Fields& root, FlightRecordDump& dump, std::map<std::string, std::vector<int>>& members) {
  const json* config = root.find("pg_config");
  if (!config || !config->is_object()) return;
  for (const auto& [name, pg] : config->items()) {
    if (!pg.is_object() || !pg.contains("ranks") || !pg["ranks"].is_string()) continue;
    std::vector<int> ranks;
    const std::string& text = pg["ranks"].get_ref<const std::string&>();
    for (std::size_t i = 0; i < text.size();) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) { ++i; continue; }
      std::size_t used = 0;
      const long r = std::stol(text.substr(i, 9), &used);
      ranks.push_back(static_cast<int>(r));
      i += used;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;  // a rank past 9 digits: cut
    }
    dump.world_size_hint = std::max(dump.world_size_hint, static_cast<int>(ranks.size()));
    if (!name.empty() && !ranks.empty()) members[name] = ranks;
  }
}

void read_status(const Fields& root, FlightRecordDump& dump) {
  const json* status = root.find("pg_status");
  if (!status || !status->is_object()) return;
  for (const auto& [name, pg] : status->items()) {
    if (!pg.is_object()) continue;
    const Fields s{pg, dump.file, "pg_status." + name};
    dump.group_status["pg " + name] = "last enqueued #" + std::to_string(s.integer("last_enqueued_collective")) +
                                      ", last completed #" + std::to_string(s.integer("last_completed_collective"));
  }
}

}  // namespace

std::optional<int> flight_record_rank(const std::string& file) {
  std::size_t end = file.size(), start = end;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(file[start - 1]))) --start;
  if (start == end || end - start > 9) return std::nullopt;
  return std::stoi(file.substr(start));
}

FlightRecordDump decode_flight_record(const std::string& bytes, const std::string& file, int rank) {
  FlightRecordDump dump;
  dump.file = file;
  dump.rank = rank;
  const json root_value = parse_dump(bytes, file, dump.format);
  const Fields root{root_value, file, "the dump"};
  dump.version = root.text("version");
  check_version(dump.version, file);
  std::map<std::string, std::vector<int>> members;
  read_groups(root, dump, members);
  read_status(root, dump);
  const json& entries = root.at("entries");
  if (!entries.is_array()) fail(file, "entries is not a list");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Fields e{entries[i], file, "entries[" + std::to_string(i) + "]"};
    if (!entries[i].is_object()) fail(file, e.path + " is not a dict");
    if (is_point_to_point(e)) {
      ++dump.point_to_point;
      continue;
    }
    auto mark = decode_entry(e, rank);
    if (const auto it = members.find(e.at("process_group")[0].get<std::string>()); it != members.end())
      mark.group_ranks = it->second;
    dump.collectives.push_back(std::move(mark));
  }
  return dump;
}

}  // namespace shardscope::diagnosis
