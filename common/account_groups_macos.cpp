// macOS (written for it, not compiled on a Mac here): getgrouplist takes int, the size of gid_t.
#include <unistd.h>

#include "common/account_groups.h"

namespace pine {

int groupList(const char* user, gid_t base, gid_t* groups, int* n) {
  return getgrouplist(user, (int)base, reinterpret_cast<int*>(groups), n);
}

}  // namespace pine
