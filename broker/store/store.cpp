// Opening the store: the file, its mode, the pragmas, the schema.
#include "broker/store/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "broker/store/background_checkpoints.h"
#include "broker/store/migrations.h"
#include "broker/store/sqlite_db.h"

namespace pine::store {

using detail::Db;

namespace {

std::string parentOf(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// Creates the file with mode 600 ourselves (SQLite would use 644), or narrows an existing
// one: the database holds conversations and approvals. The -wal and -shm files SQLite
// creates take the database file's mode.
void prepareFile(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      throw StoreError(path + " is a symbolic link; the database must be a regular file: replace the link with the "
                              "file it points to");
    if (!S_ISREG(st.st_mode)) throw StoreError(path + " is not a regular file; move it aside so pine can create its database");
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::string p = path + suffix;
      struct stat s {};
      if (::lstat(p.c_str(), &s) == 0 && S_ISREG(s.st_mode) && (s.st_mode & 077) != 0 && ::chmod(p.c_str(), 0600) != 0)
        throw StoreError("cannot make " + p + " private (mode 600): " + std::strerror(errno) +
                         "; it must belong to pine's user");
    }
    return;
  }
  if (errno != ENOENT) throw StoreError("cannot look at " + path + ": " + std::strerror(errno));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    std::string how = err == ENOENT ? "create the folder " + parentOf(path) + " first (mode 700)"
                                    : "pine's user must be able to write in " + parentOf(path);
    throw StoreError("cannot create the database " + path + ": " + std::strerror(err) + "; " + how);
  }
  ::close(fd);
}

}  // namespace

Store::Store(std::unique_ptr<Db> db) : db_(std::move(db)) {}
Store::~Store() = default;

std::unique_ptr<Store> Store::open(const std::string& path) {
  prepareFile(path);
  auto db = std::make_unique<Db>(path);
  db->exec("PRAGMA busy_timeout = 5000", "setting the busy timeout");
  detail::checkOpenable(*db);
  // WAL + synchronous=NORMAL: a commit is in the WAL (in the kernel's hands) before COMMIT
  // returns, so it survives a crash of the process; a power loss may lose the last commits,
  // never consistency. See README.md.
  {
    auto st = db->prepare("PRAGMA journal_mode = WAL", "turning on WAL");
    std::string mode = st.step() ? st.text(0) : "";
    if (mode != "wal")
      throw StoreError("cannot use WAL for " + path + " (journal mode stays '" + mode +
                       "'): keep data/ on a local file system that supports shared memory");
  }
  db->exec("PRAGMA synchronous = NORMAL", "setting synchronous");
  db->exec("PRAGMA foreign_keys = ON", "turning on foreign keys");
  // Deleted and rewritten text is zeroed in the file: retention and rewriteText must
  // really remove what they remove (a secret, an old conversation).
  db->exec("PRAGMA secure_delete = ON", "turning on secure delete");
  db->exec("PRAGMA journal_size_limit = 16777216", "limiting the WAL size");
  detail::migrate(*db);
  return std::unique_ptr<Store>(new Store(std::move(db)));
}

const std::string& Store::path() const { return db_->path(); }

void Store::checkpointInBackground(CheckpointLimits limits) {
  if (limits.pages < 1 || limits.restartPages < limits.pages)
    throw StoreError("checkpoint limits: pages must be at least 1 and restartPages at least pages");
  checkpoints_.reset();
  checkpoints_ = std::make_unique<detail::BackgroundCheckpoints>(*db_, limits);
}

unsigned long long Store::backgroundCheckpoints() const { return checkpoints_ ? checkpoints_->threadRuns() : 0; }
unsigned long long Store::restartCheckpoints() const { return checkpoints_ ? checkpoints_->writerRuns() : 0; }
int Store::schemaVersion() const { return int(db_->pragmaInt("user_version")); }
int Store::latestSchemaVersion() { return detail::latestVersion(); }

}  // namespace pine::store
