// The store's schema as a numbered list of steps, and the checks before any step runs.
#pragma once
#include <vector>

#include "broker/store/sqlite_db.h"

namespace pine::store::detail {

// 'pine' in PRAGMA application_id: tells pine's database from another program's.
constexpr int kApplicationId = 0x70696e65;

struct Migration {
  int version;       // PRAGMA user_version after this step
  const char* what;  // for error messages
  const char* sql;
};

// Append only: a released step is never edited (databases in the field ran it).
const std::vector<Migration>& migrations();
int latestVersion();

// Refuses a file that is not pine's or is newer than this program; nothing is written then.
void checkOpenable(Db& db);
// Runs the missing steps, each in its own transaction with its user_version.
void migrate(Db& db);

}  // namespace pine::store::detail
