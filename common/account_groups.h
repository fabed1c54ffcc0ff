// Whether the system's group database lists this process's account in a group: what a new login
// gets, unlike getgroups(2), which says what this process has.
#pragma once
#include <sys/types.h>

namespace pine {

bool accountHasGroup(gid_t gid);

// getgrouplist(3) with gid_t everywhere: macOS's takes int (the same size). One file per
// platform (account_groups_linux.cpp, account_groups_macos.cpp), chosen in common/meson.build.
int groupList(const char* user, gid_t base, gid_t* groups, int* n);

}  // namespace pine
