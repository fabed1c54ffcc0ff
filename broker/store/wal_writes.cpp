#include "broker/store/wal_writes.h"

#include <sqlite3.h>

#include <atomic>
#include <cstring>
#include <new>
#include <string>

namespace pine::store::detail {
namespace {

// At most this much in one write: the default VFS takes fewer than 128 KiB a call (it keeps 17
// bits of the length), and a longer transaction is several writes anyway.
constexpr size_t kMaxGathered = 64 * 1024;
constexpr int kFrameHeader = 24;          // a WAL frame's header, written by SQLite on its own
std::atomic<unsigned long long> g_walWrites{0};
sqlite3_vfs* g_root = nullptr;            // the default VFS, which does the real work

// SQLite allocates szOsFile bytes for each open file: this, then the default VFS's file.
struct File {
  sqlite3_file base;
  sqlite3_file* real;
  bool isWal;
  File* wal;              // a database: its WAL, opened through this VFS by the same connection
  File* db;               // a WAL: its database
  std::string* gathered;  // a WAL: what waits to be written, from `offset`
  sqlite3_int64 offset;
  bool commitNext;        // the last write was a commit frame's header: its page ends the commit
  int failed;             // a write that could not report its failure: every later one fails
};
constexpr size_t kRealOffset = (sizeof(File) + 15) & ~size_t(15);

File* self(sqlite3_file* f) { return reinterpret_cast<File*>(f); }
File* walOf(File* p) { return p->isWal ? p : p->wal; }

int flush(File* w) {
  if (!w) return SQLITE_OK;
  if (w->failed) return w->failed;
  if (!w->gathered || w->gathered->empty()) return SQLITE_OK;
  std::string& g = *w->gathered;
  ++g_walWrites;
  int rc = w->real->pMethods->xWrite(w->real, g.data(), (int)g.size(), w->offset);
  g.clear();
  w->commitNext = false;
  return rc;
}

// Before anything but a write of the WAL itself: what waits goes out first.
int before(File* p) { return flush(walOf(p)); }

int xClose(sqlite3_file* f) {
  File* p = self(f);
  int rc = p->isWal ? flush(p) : SQLITE_OK;
  if (p->isWal && p->db) p->db->wal = nullptr;
  if (!p->isWal && p->wal) p->wal->db = nullptr;
  int closed = p->real->pMethods->xClose(p->real);
  delete p->gathered;
  p->gathered = nullptr;
  return rc != SQLITE_OK ? rc : closed;
}

// Writes what waits, then does what the default VFS's method of that name does.
template <auto Method, typename... A>
int passOn(sqlite3_file* f, A... a) {
  File* p = self(f);
  if (int rc = before(p)) return rc;
  return (p->real->pMethods->*Method)(p->real, a...);
}

int xWrite(sqlite3_file* f, const void* data, int amt, sqlite3_int64 off) {
  File* p = self(f);
  if (!p->isWal) return passOn<&sqlite3_io_methods::xWrite, const void*, int, sqlite3_int64>(f, data, amt, off);
  if (p->failed) return p->failed;
  std::string& g = *p->gathered;
  // Not where the last write ended, or too much with it: what waits goes first.
  if (!g.empty() && (off != p->offset + (sqlite3_int64)g.size() || g.size() + (size_t)amt > kMaxGathered))
    if (int rc = flush(p)) return rc;
  if ((size_t)amt > kMaxGathered) {  // a page larger than what is gathered: as SQLite wrote it
    ++g_walWrites;
    p->commitNext = false;
    return p->real->pMethods->xWrite(p->real, data, amt, off);
  }
  try {
    if (g.empty()) p->offset = off;
    g.append(static_cast<const char*>(data), (size_t)amt);
  } catch (std::bad_alloc&) {
    g.clear();
    return SQLITE_IOERR_NOMEM;
  }
  bool commitEnds = p->commitNext;
  p->commitNext = false;
  if (amt == kFrameHeader) {
    // Bytes 4 to 7 of a frame's header: the database's size after a commit, 0 in other frames.
    auto* h = static_cast<const unsigned char*>(data);
    p->commitNext = (h[4] | h[5] | h[6] | h[7]) != 0;
  }
  if (commitEnds) return flush(p);
  return SQLITE_OK;
}

int xSectorSize(sqlite3_file* f) { return self(f)->real->pMethods->xSectorSize(self(f)->real); }
int xDeviceCharacteristics(sqlite3_file* f) {
  return self(f)->real->pMethods->xDeviceCharacteristics(self(f)->real);
}
// The wal-index lives in the database's shared memory: before SQLite touches it (publishing a
// commit, taking or dropping a lock), its connection's WAL is written (passOn).
void xShmBarrier(sqlite3_file* f) {
  File* p = self(f);
  // No way to report a failure here: the WAL remembers it, and its next use fails.
  if (File* w = walOf(p); w && !w->failed)
    if (int rc = flush(w)) w->failed = rc;
  p->real->pMethods->xShmBarrier(p->real);
}
int xUnfetch(sqlite3_file* f, sqlite3_int64 off, void* page) {
  File* p = self(f);
  return p->real->pMethods->xUnfetch(p->real, off, page);
}

// One table per version of the default VFS's file methods: SQLite calls only what the version has.
sqlite3_io_methods methodsOf(int version) {
  sqlite3_io_methods m{};
  m.iVersion = version;
  m.xClose = xClose;
  m.xRead = passOn<&sqlite3_io_methods::xRead, void*, int, sqlite3_int64>;
  m.xWrite = xWrite;
  m.xTruncate = passOn<&sqlite3_io_methods::xTruncate, sqlite3_int64>;
  m.xSync = passOn<&sqlite3_io_methods::xSync, int>;
  m.xFileSize = passOn<&sqlite3_io_methods::xFileSize, sqlite3_int64*>;
  m.xLock = passOn<&sqlite3_io_methods::xLock, int>;
  m.xUnlock = passOn<&sqlite3_io_methods::xUnlock, int>;
  m.xCheckReservedLock = passOn<&sqlite3_io_methods::xCheckReservedLock, int*>;
  m.xFileControl = passOn<&sqlite3_io_methods::xFileControl, int, void*>;
  m.xSectorSize = xSectorSize;
  m.xDeviceCharacteristics = xDeviceCharacteristics;
  if (version >= 2) {
    m.xShmMap = passOn<&sqlite3_io_methods::xShmMap, int, int, int, void volatile**>;
    m.xShmLock = passOn<&sqlite3_io_methods::xShmLock, int, int, int>;
    m.xShmBarrier = xShmBarrier;
    m.xShmUnmap = passOn<&sqlite3_io_methods::xShmUnmap, int>;
  }
  if (version >= 3) {
    m.xFetch = passOn<&sqlite3_io_methods::xFetch, sqlite3_int64, int, void**>;
    m.xUnfetch = xUnfetch;
  }
  return m;
}
const sqlite3_io_methods kMethods[3] = {methodsOf(1), methodsOf(2), methodsOf(3)};

bool ours(const sqlite3_file* f) {
  return f && f->pMethods && f->pMethods >= &kMethods[0] && f->pMethods <= &kMethods[2];
}

int xOpen(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* outFlags) {
  File* p = self(f);
  std::memset(p, 0, sizeof(File));
  p->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(p) + kRealOffset);
  int rc = g_root->xOpen(g_root, name, p->real, flags, outFlags);
  if (rc != SQLITE_OK || !p->real->pMethods) {
    p->base.pMethods = nullptr;  // SQLite calls nothing on a file that did not open
    return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
  }
  p->isWal = (flags & SQLITE_OPEN_WAL) != 0;
  if (p->isWal) {
    p->gathered = new (std::nothrow) std::string();
    if (!p->gathered) {
      p->real->pMethods->xClose(p->real);
      p->base.pMethods = nullptr;
      return SQLITE_NOMEM;
    }
    // The database this WAL belongs to (same connection): its shared-memory calls write the WAL first.
    sqlite3_file* dbFile = name ? sqlite3_database_file_object(name) : nullptr;
    if (ours(dbFile)) {
      p->db = self(dbFile);
      p->db->wal = p;
    }
  }
  int version = p->real->pMethods->iVersion;
  p->base.pMethods = &kMethods[(version < 1 ? 1 : version > 3 ? 3 : version) - 1];
  return SQLITE_OK;
}

}  // namespace

const char* walWritesVfs() {
  static const char* name = [] {
    static sqlite3_vfs vfs;
    g_root = sqlite3_vfs_find(nullptr);
    vfs = *g_root;  // everything but opening a file is the default VFS's own
    vfs.pNext = nullptr;
    vfs.zName = "pine-wal-writes";
    vfs.szOsFile = (int)(kRealOffset + (size_t)g_root->szOsFile);
    vfs.xOpen = xOpen;
    sqlite3_vfs_register(&vfs, 0);
    return vfs.zName;
  }();
  return name;
}

unsigned long long walWriteCalls() { return g_walWrites.load(); }

}  // namespace pine::store::detail
