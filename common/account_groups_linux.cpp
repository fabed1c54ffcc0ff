#include <grp.h>

#include "common/account_groups.h"

namespace pine {

int groupList(const char* user, gid_t base, gid_t* groups, int* n) { return getgrouplist(user, base, groups, n); }

}  // namespace pine
