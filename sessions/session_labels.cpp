#include "sessions/session_labels.hpp"

#include <cctype>

#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {
namespace {

bool is_blank(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

void require_session(SqliteDb& db, std::int64_t session_id) {
  Statement s(db, "SELECT 1 FROM sessions WHERE id = ?");
  s.bind(1, session_id);
  if (!s.step())
    throw StoreError(ErrorKind::kNotFound, db.path() + ": no session with id " + std::to_string(session_id) +
                                               " (see `shardscope sessions list --db " + db.path() + "`)");
}

void check_tag(const std::string& tag) {
  const bool padded = !tag.empty() && (std::isspace(static_cast<unsigned char>(tag.front())) ||
                                       std::isspace(static_cast<unsigned char>(tag.back())));
  if (is_blank(tag) || padded || tag.find(',') != std::string::npos)
    throw SessionsError(ErrorKind::kInvalidArgument,
                        "tag '" + tag + "' is not usable: a tag is non-empty text without commas and without "
                        "leading or trailing spaces, e.g. 'baseline' or 'lr sweep'");
}

}  // namespace

void rename_session(Store& store, std::int64_t session_id, const std::string& name) {
  if (is_blank(name))
    throw SessionsError(ErrorKind::kInvalidArgument, "a session name cannot be empty; give the new name");
  SqliteDb& db = store.db();
  Transaction transaction(db);
  require_session(db, session_id);
  Statement s(db, "UPDATE sessions SET name = ? WHERE id = ?");
  s.bind(1, name).bind(2, session_id).run();
  transaction.commit();
}

std::vector<std::string> edit_session_tags(Store& store, std::int64_t session_id, const std::vector<std::string>& add,
                                           const std::vector<std::string>& remove) {
  for (const auto& tag : add) check_tag(tag);
  SqliteDb& db = store.db();
  Transaction transaction(db);
  require_session(db, session_id);
  Statement insert(db, "INSERT OR IGNORE INTO session_tags(session_id, tag) VALUES(?, ?)");
  for (const auto& tag : add) insert.bind(1, session_id).bind(2, tag).run();
  Statement erase(db, "DELETE FROM session_tags WHERE session_id = ? AND tag = ?");
  for (const auto& tag : remove) erase.bind(1, session_id).bind(2, tag).run();
  transaction.commit();
  std::vector<std::string> tags;
  Statement list(db, "SELECT tag FROM session_tags WHERE session_id = ? ORDER BY tag");
  list.bind(1, session_id);
  while (list.step()) tags.push_back(list.text(0));
  return tags;
}

}  // namespace shardscope::sessions
