// pine-web: the bundled `web` MCP server of one agent. pined starts it by exec, already inside
// the egress sandbox (network; no home, no .env; seccomp; an unprivileged uid when pined is
// root), writes its job (the server's rules and the search key's value) as the first line on
// fd 3, and hands the other end of that socket to the broker, which speaks MCP on it.
#include <fcntl.h>
#include <signal.h>

#include <cstdio>
#include <string_view>

#include "common/sanitizer_no_proc.h"  // no /proc in its sandbox
#include "web/mcp_server.h"
#include "common/version_flag.h"

int main(int argc, char** argv) {
  if (pine::printedVersion(argc, argv, "pine-web")) return 0;
  if (argc > 1 || fcntl(3, F_GETFD) == -1) {
    const bool help = argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h");
    std::fputs("usage: pine-web   (no arguments: reads its job, one JSON line, on fd 3, then serves MCP to the\n"
               "                   broker on the same socket, one JSON-RPC message a line; started by pined)\n",
               help ? stdout : stderr);
    return help ? 0 : 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a vanished broker is a failed write
  return pine::web::serve(3);
}
