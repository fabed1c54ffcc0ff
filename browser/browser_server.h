// pine-browser's life: the job from fd 3, a fresh profile folder, the proxy, Chromium, then MCP
// on fd 3 until the broker closes it; then Chromium is killed and the profile removed.
#pragma once

namespace pine::browser {

int serve(int fd);

}  // namespace pine::browser
