// The system folders a sandboxed program's runtime reads, as this platform lays them out:
// one file per platform (system_runtime_linux.cpp, system_runtime_macos.cpp), chosen in
// sandbox/meson.build, which also holds elfInterpreter() (policy.h). policy.cpp resolves them.
#pragma once
#include <vector>

namespace pine::sandbox {

std::vector<const char*> systemRoots();        // any sandboxed program (defaultSystemReadable)
std::vector<const char*> brokerSystemRoots();  // the broker's narrower set (brokerSystemReadable)
// What Chromium with its own sandbox reads and writes beyond the egress set (browserPolicy).
std::vector<const char*> browserSystemReadable();
std::vector<const char*> browserSystemWritable();
std::vector<const char*> browserHiddenRoots();  // hidden whole from pine-browser: the system's sockets

}  // namespace pine::sandbox
