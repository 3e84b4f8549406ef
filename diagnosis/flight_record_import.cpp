// Reading a run's flight recorder dumps from disk and storing their diagnosis (flight_record_import.hpp).
#include "diagnosis/flight_record_import.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "sessions/event_sink.hpp"
#include "sessions/import/file_bytes.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store_writer.hpp"

namespace shardscope::diagnosis {
namespace {

namespace fs = std::filesystem;
using sessions::ImportError;

// The prefix of a dump's name: all but its trailing digits.
std::string name_prefix(const std::string& name) {
  std::size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  return name.substr(0, end);
}

// A folder's dumps: its regular files whose names end in a rank, all of one prefix.
std::vector<FlightRecordInput> folder_dumps(const std::string& folder) {
  std::map<std::string, std::vector<std::string>> by_prefix;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(folder, ec)) {
    const std::string name = item.path().filename().string();
    if (item.is_regular_file(ec) && flight_record_rank(name)) by_prefix[name_prefix(name)].push_back(item.path().string());
  }
  if (ec) throw ImportError(folder + ": cannot list the folder (" + ec.message() + ")");
  if (by_prefix.empty())
    throw ImportError(folder + ": no flight recorder dump here (torch names them PREFIX<rank>, by default "
                      "nccl_trace_rank_<rank>; TORCH_NCCL_DEBUG_INFO_TEMP_FILE sets the prefix)");
  if (by_prefix.size() > 1) {
    std::string prefixes;
    for (const auto& [prefix, files] : by_prefix) prefixes += (prefixes.empty() ? "" : ", ") + prefix + "<rank>";
    throw ImportError(folder + ": holds dumps of " + std::to_string(by_prefix.size()) + " name patterns (" + prefixes +
                      "); give the files of one run instead of the folder (" + folder + "/" +
                      by_prefix.begin()->first + "*)");
  }
  std::vector<FlightRecordInput> inputs;
  for (const auto& file : by_prefix.begin()->second) inputs.push_back({std::nullopt, file});
  return inputs;
}

std::vector<FlightRecordInput> expand(const std::vector<FlightRecordInput>& inputs) {
  std::vector<FlightRecordInput> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in.path, ec) && !in.rank) {
      auto found = folder_dumps(in.path);
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}

int rank_of(const FlightRecordInput& in) {
  if (in.rank) return *in.rank;
  if (const auto r = flight_record_rank(fs::path(in.path).filename().string())) return *r;
  throw ImportError(in.path + ": the name does not end in a rank (torch writes PREFIX<rank>); give it as RANK=" + in.path);
}

double modified_at(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
}

sessions::RunStart run_start(const std::vector<FlightRecordDump>& dumps, const FlightRecordImportOptions& options) {
  sessions::RunStart start;
  const std::string folder = fs::path(dumps.front().file).parent_path().filename().string();
  start.name = !options.name.empty() ? options.name : "flight record" + (folder.empty() ? "" : " " + folder);
  start.tags = options.tags;
  start.world_size = flight_record_world_size(dumps);
  start.started_at = 0;
  for (const auto& d : dumps)
    for (const auto& m : d.collectives)
      if (start.started_at == 0 || m.entered_at < start.started_at) start.started_at = m.entered_at;
  for (int r = 0; r < start.world_size; ++r) start.ranks.push_back({r, r, "", 0, ""});
  return start;
}

sessions::SessionOrigin origin(const std::vector<FlightRecordDump>& dumps) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& d : dumps)
    files.push_back({{"rank", d.rank}, {"file", fs::absolute(d.file).lexically_normal().string()},
                     {"format", d.format}, {"version", d.version}, {"collectives", d.collectives.size()}});
  return {"flight-recorder-import", nlohmann::json{{"flight_records", files}}.dump()};
}

// The run as the store knows it, for an existing session: its hosts name the ranks.
RunPicture picture_of(sessions::Store& store, std::int64_t id, std::string& uid) {
  const auto detail = sessions::load_session(store, id);
  uid = detail.info.uid;
  RunPicture run;
  run.world_size = detail.info.world_size;
  for (const auto& r : detail.ranks) run.hosts[r.info.rank] = r.info.host;
  return run;
}

}  // namespace

std::vector<FlightRecordDump> read_flight_records(const std::vector<FlightRecordInput>& inputs, double& newest_write) {
  std::vector<FlightRecordDump> dumps;
  std::map<int, std::string> seen;
  newest_write = 0;
  for (const auto& in : expand(inputs)) {
    const int rank = rank_of(in);
    if (const auto [it, fresh] = seen.emplace(rank, in.path); !fresh)
      throw ImportError(in.path + ": a second dump of rank " + std::to_string(rank) + " (the first is " + it->second +
                        "); give the dumps of one run");
    dumps.push_back(decode_flight_record(sessions::read_file_bytes(in.path, kMaxFlightRecordBytes), in.path, rank));
    newest_write = std::max(newest_write, modified_at(in.path));
  }
  std::sort(dumps.begin(), dumps.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return dumps;
}

FlightRecordImportResult import_flight_records(sessions::Store& store, const std::vector<FlightRecordDump>& dumps,
                                               double dumped_at, const FlightRecordImportOptions& options) {
  if (dumps.empty()) throw ImportError("no flight recorder dump to import");
  FlightRecordImportResult result;
  RunPicture run;
  if (options.session_id) run = picture_of(store, *options.session_id, result.session_uid);
  run.now = dumped_at;
  result.finding = diagnose_flight_records(dumps, run);
  std::vector<sessions::Event> events;
  result.new_session = !options.session_id;
  if (result.new_session) {
    result.session_uid = sessions::new_session_uid();
    events.push_back(run_start(dumps, options));
    events.push_back(origin(dumps));
  }
  for (auto& m : flight_record_marks(dumps, run.world_size)) events.push_back(std::move(m));
  result.collectives = events.size() - (result.new_session ? 2 : 0);
  events.push_back(result.finding);
  if (result.new_session)
    events.push_back(sessions::RunEnd{result.finding.kind == "hang" ? "hung" : "unknown", dumped_at, 0, {}});
  sessions::StoreWriter(store).write(result.session_uid, events);
  result.session_id = options.session_id ? *options.session_id : sessions::find_session(store, result.session_uid);
  return result;
}

}  // namespace shardscope::diagnosis
