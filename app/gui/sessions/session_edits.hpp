#pragma once
// Renaming, tagging and deleting recorded sessions from the Sessions page: the sessions library's
// rename_session, edit_session_tags and delete_sessions on the session's own file, each with its
// CLI twin (`shardscope sessions rename|tag|delete ... --db FILE`). Plain functions, no widgets.

#include <string>
#include <vector>

#include "app/gui/sessions/compare_data.hpp"

namespace shardscope::gui {

/// What an edit did: "" on success, else the error to show.
struct EditOutcome {
  std::string error;
  std::vector<std::string> tags;  ///< edit_tags: the session's tags afterwards
  std::vector<std::string> files;  ///< export: the files written
  bool ok() const { return error.empty(); }
};

EditOutcome rename_session_ref(const SessionRef& session, const std::string& name);
EditOutcome edit_tags_ref(const SessionRef& session, const std::vector<std::string>& add,
                          const std::vector<std::string>& remove);
/// Deletes the sessions (grouped by file, one transaction per file). A session still recorded as
/// running is refused, as `sessions delete` refuses it without --force.
EditOutcome delete_session_refs(const std::vector<SessionRef>& sessions);

/// Writes the sessions' records (sessions, ranks, tags, steps, timers, comms, activities, NVTX,
/// logs) as one CSV file per table into `directory`, as `shardscope sessions export --csv DIR` does
/// (sessions::export_csv). The sessions must come from one file (the CLI exports one --db).
EditOutcome export_session_refs(const std::vector<SessionRef>& sessions, const std::string& directory);

/// The CLI twins. `uid` selects the session as `sessions list` shows it.
std::string rename_command(const std::string& file, const std::string& uid, const std::string& name);
std::string tag_command(const std::string& file, const std::string& uid, const std::vector<std::string>& add,
                        const std::vector<std::string>& remove);
std::string delete_command(const std::string& file, const std::vector<std::string>& uids);
std::string export_command(const std::string& file, const std::vector<std::string>& uids, const std::string& directory);

/// "a, b ,c" -> {"a", "b", "c"} (blank items dropped).
std::vector<std::string> split_tag_list(const std::string& text);

}  // namespace shardscope::gui
