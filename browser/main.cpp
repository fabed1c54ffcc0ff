// pine-browser: the bundled `browser` MCP server of one agent. pined starts it by exec, already
// inside its sandbox (sandbox::browserPolicy: the egress one plus what Chromium's own sandbox
// needs), writes its job as the first line on fd 3, and hands the other end of that socket to
// the broker, which speaks MCP on it. It starts headless Chromium (its sandbox on) with a fresh
// profile in the server's folder, every connection through its own proxy (browser/proxy.h).
#include <fcntl.h>
#include <signal.h>

#include <cstdio>
#include <string_view>

#include "browser/browser_server.h"
#include "common/version_flag.h"

int main(int argc, char** argv) {
  if (pine::printedVersion(argc, argv, "pine-browser")) return 0;
  if (argc > 1 || fcntl(3, F_GETFD) == -1) {
    const bool help = argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h");
    std::fputs("usage: pine-browser   (no arguments: reads its job, one JSON line, on fd 3, then serves MCP to the\n"
               "                       broker on the same socket, one JSON-RPC message a line; started by pined)\n",
               help ? stdout : stderr);
    return help ? 0 : 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a vanished broker or Chromium is a failed write
  return pine::browser::serve(3);
}
