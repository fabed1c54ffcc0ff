// Which folders changed, as the platform tells it: one small interface with a file per platform
// (folder_notify_linux.cpp: inotify read through KJ's event port; folder_notify_macos.cpp: none
// yet). KJ's own fd watching was chosen over embedding libuv: the broker already runs KJ's loop,
// inotify is one fd, and libuv's fs events on Linux are the same inotify without recursion.
// A notice is only a hint: the folder source looks at the folder itself for every notice, so a
// lost or spurious one costs a look, never a wrong event.
#pragma once
#include <kj/async-unix.h>

#include <optional>
#include <string>
#include <vector>

namespace pine::sources {

struct FolderNotice {
  std::string dir;        // the watched folder it concerns, as passed to watch() ("" the top)
  std::string name;       // the entry in it that changed; empty: look at the whole folder
  bool overflow = false;  // notices were lost: look at everything again
};

class FolderNotify {
 public:
  virtual ~FolderNotify() = default;
  // Watches the folder `full` (one level: a recursive source watches each sub-folder), reported as
  // `rel`. A link is never followed. Error text, or nullopt.
  virtual std::optional<std::string> watch(const std::string& full, const std::string& rel) = 0;
  // Stops watching `rel` and every folder below it.
  virtual void unwatch(const std::string& rel) = 0;
  // Everything noticed since the last call, as soon as there is something.
  virtual kj::Promise<std::vector<FolderNotice>> next() = 0;
};

// The platform's notices, or nullptr with `whyNot` set.
kj::Own<FolderNotify> makeFolderNotify(kj::UnixEventPort& port, std::string& whyNot);

}  // namespace pine::sources
