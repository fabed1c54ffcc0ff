#include "tests/sources/permissions_apply.h"

namespace sources_test {

// Not Linux: a test run as the owner meets permission bits anyway.
PermissionsApply::PermissionsApply() {}
PermissionsApply::~PermissionsApply() {}

}  // namespace sources_test
