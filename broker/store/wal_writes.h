// A SQLite VFS over the default one that writes a transaction's WAL frames with one write.
// SQLite writes each frame of a commit as two writes (its 24-byte header, then the page), so
// a commit of 12 pages cost 24 write calls (bench-events: the largest part of a single
// event's commit). Here contiguous writes to a `-wal` file are gathered and written at once
// when the commit frame's page arrives, so the transaction is in the file (the page cache)
// before SQLite publishes it in the wal-index or returns from COMMIT, exactly as before:
// nothing acknowledged is lost by a crash of the process. Anything else done with the WAL
// (a read, a sync, a size, a lock), with the database's shared memory (the wal-index, its
// locks and barrier), a write elsewhere in the file, or 64 KiB gathered, writes what waits
// first. Other files pass through untouched.
#pragma once

namespace pine::store::detail {

// The VFS's name for sqlite3_open_v2, registered (not as the default) on first use.
const char* walWritesVfs();

// How many write calls reached the WAL files through this VFS since the process started: for
// the tests that show a commit is one write.
unsigned long long walWriteCalls();

}  // namespace pine::store::detail
