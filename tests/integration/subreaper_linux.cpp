// The test process adopts every orphan of the trees it starts (PR_SET_CHILD_SUBREAPER), so a
// process that outlived its pined is still found among this test's descendants (harness.h:
// processesMentioning) instead of escaping to init, where another test binary running beside
// this one could not be told apart from it.
#include <sys/prctl.h>

namespace {
[[maybe_unused]] const bool adopted = [] { return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }();
}  // namespace
