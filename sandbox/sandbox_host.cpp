// What both platforms' hosts share (sandbox_host.h).
#include "sandbox/sandbox_host.h"

namespace pine::sandbox {

void seatbeltLaunch(PreparedSandbox& box, const LaunchParams& request) {
  // sandbox-exec applies it (supervisor/spawn.h), in request.cwd; the program keeps pined's uid.
  box.seatbelt = buildSeatbeltProfile(box.policy, request.seatbelt);
  box.mode = "full";  // as far as pine can tell: sandbox-exec applies it
}

}  // namespace pine::sandbox
