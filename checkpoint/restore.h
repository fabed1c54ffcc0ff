// Undo of one task: the files it changed are put back as its "before" checkpoint had them, and only
// those; a file that changed again since the task ended (a later run, the owner) is not overwritten
// unless forced. Writes go through descriptors opened with O_NOFOLLOW, so a link in the workspace is
// replaced as a link, never written through.
#pragma once
#include <nlohmann/json.hpp>

#include "checkpoint/manifest.h"

namespace pine::checkpoint {

// {"ok": bool, "restored": [...], "removed": [...], "changed_since": [...], "failed": [{path, why}]}.
// Without force, any path in changed_since refuses the whole undo (ok false, nothing written).
nlohmann::json undo(int workspace, int shadow, const Manifest& before, const Manifest& after, bool force);

}  // namespace pine::checkpoint
