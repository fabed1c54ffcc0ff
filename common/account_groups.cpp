#include "common/account_groups.h"

#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace pine {

bool accountHasGroup(gid_t gid) {
  struct passwd* pw = getpwuid(getuid());
  if (!pw) return false;
  int n = 64;
  std::vector<gid_t> groups((size_t)n);
  for (int tries = 0; tries < 4; ++tries) {
    if (groupList(pw->pw_name, pw->pw_gid, groups.data(), &n) >= 0) {
      for (int i = 0; i < n; ++i)
        if (groups[(size_t)i] == gid) return true;
      return false;
    }
    groups.resize((size_t)n + 16);
    n = (int)groups.size();
  }
  return false;
}

}  // namespace pine
