// macOS: no folder notices yet (FSEvents would go here, behind the same interface), so a folder
// source says why it does not run instead of pretending to watch.
#include "broker/sources/folder_notify.h"

namespace pine::sources {

kj::Own<FolderNotify> makeFolderNotify(kj::UnixEventPort&, std::string& whyNot) {
  whyNot = "folder sources are not supported on this platform yet (Linux only: inotify)";
  return kj::Own<FolderNotify>();
}

}  // namespace pine::sources
