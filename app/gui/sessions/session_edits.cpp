#include "app/gui/sessions/session_edits.hpp"

#include <map>
#include <utility>

#include "app/gui/common/cli_locator.hpp"
#include "sessions/errors.hpp"
#include "sessions/session_export.hpp"
#include "sessions/session_labels.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

template <typename Edit>
EditOutcome on_store(const std::string& file, Edit edit) {
  EditOutcome out;
  try {
    ss::Store store = ss::Store::open(file, {});
    edit(store, out);
  } catch (const std::exception& e) {
    out.error = file + ": " + e.what();
  }
  return out;
}

EditOutcome failed_edit(std::string error) {
  EditOutcome out;
  out.error = std::move(error);
  return out;
}

}  // namespace

EditOutcome rename_session_ref(const SessionRef& session, const std::string& name) {
  return on_store(session.file, [&](ss::Store& store, EditOutcome&) { ss::rename_session(store, session.id, name); });
}

EditOutcome edit_tags_ref(const SessionRef& session, const std::vector<std::string>& add,
                          const std::vector<std::string>& remove) {
  return on_store(session.file,
                  [&](ss::Store& store, EditOutcome& out) { out.tags = ss::edit_session_tags(store, session.id, add, remove); });
}

EditOutcome delete_session_refs(const std::vector<SessionRef>& sessions) {
  std::map<std::string, std::vector<std::int64_t>> by_file;
  for (const auto& s : sessions) by_file[s.file].push_back(s.id);
  for (const auto& [file, ids] : by_file) {
    EditOutcome out = on_store(file, [&](ss::Store& store, EditOutcome&) {
      for (const auto id : ids) {
        const auto info = ss::load_session(store, id).info;
        if (info.status == "running")
          throw ss::SessionsError(ss::ErrorKind::kInvalidArgument,
                                  "session " + std::to_string(id) + " '" + info.name +
                                      "' is still running (no run end recorded): stop the run first, or use "
                                      "`shardscope sessions delete --force` if it crashed");
      }
      ss::delete_sessions(store, ids);
    });
    if (!out.ok()) return out;
  }
  return {};
}

EditOutcome export_session_refs(const std::vector<SessionRef>& sessions, const std::string& directory) {
  if (sessions.empty()) return failed_edit("select the sessions to export");
  std::vector<std::int64_t> ids;
  for (const auto& s : sessions) {
    if (s.file != sessions.front().file)
      return failed_edit("the selection spans " + sessions.front().file + " and " + s.file +
                         ": select sessions of one file (the export, like `shardscope sessions export --db FILE`, reads one)");
    ids.push_back(s.id);
  }
  return on_store(sessions.front().file, [&](ss::Store& store, EditOutcome& out) {
    out.files = ss::export_csv(store, ids, directory).files;
  });
}

std::string rename_command(const std::string& file, const std::string& uid, const std::string& name) {
  return shell_command("shardscope", {"sessions", "rename", uid, name, "--db", file});
}

std::string tag_command(const std::string& file, const std::string& uid, const std::vector<std::string>& add,
                        const std::vector<std::string>& remove) {
  std::vector<std::string> args = {"sessions", "tag", uid, "--db", file};
  for (const auto& t : add) args.insert(args.end(), {"--add", t});
  for (const auto& t : remove) args.insert(args.end(), {"--remove", t});
  return shell_command("shardscope", args);
}

std::string delete_command(const std::string& file, const std::vector<std::string>& uids) {
  std::vector<std::string> args = {"sessions", "delete"};
  args.insert(args.end(), uids.begin(), uids.end());
  args.insert(args.end(), {"--db", file, "--yes"});
  return shell_command("shardscope", args);
}

std::string export_command(const std::string& file, const std::vector<std::string>& uids, const std::string& directory) {
  std::vector<std::string> args = {"sessions", "export"};
  args.insert(args.end(), uids.begin(), uids.end());
  args.insert(args.end(), {"--db", file, "--csv", directory});
  return shell_command("shardscope", args);
}

std::vector<std::string> split_tag_list(const std::string& text) {
  std::vector<std::string> tags;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    if (first != std::string::npos) tags.push_back(item.substr(first, last - first + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return tags;
}

}  // namespace shardscope::gui
