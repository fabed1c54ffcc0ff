#include "tests/sources/permissions_apply.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace sources_test {

PermissionsApply::PermissionsApply() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2];
  static_assert(sizeof caps == sizeof saved_, "two words of effective, permitted, inheritable");
  if (geteuid() != 0 || syscall(SYS_capget, &hdr, caps) != 0) return;
  std::memcpy(saved_, caps, sizeof caps);
  caps[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
  changed_ = syscall(SYS_capset, &hdr, caps) == 0;
}

PermissionsApply::~PermissionsApply() {
  if (!changed_) return;
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2];
  std::memcpy(caps, saved_, sizeof caps);
  syscall(SYS_capset, &hdr, caps);
}

}  // namespace sources_test
