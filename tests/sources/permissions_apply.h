// As root, the calling thread meets permission bits as the broker's own uid does, for a test of
// what the broker may not read: CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH leave its effective set
// until the end of the scope (Linux). Elsewhere, or not as root, nothing changes: the bits apply.
#pragma once

namespace sources_test {

class PermissionsApply {
 public:
  PermissionsApply();
  ~PermissionsApply();
  PermissionsApply(const PermissionsApply&) = delete;
  PermissionsApply& operator=(const PermissionsApply&) = delete;

 private:
  unsigned saved_[6] = {};
  bool changed_ = false;
};

}  // namespace sources_test
