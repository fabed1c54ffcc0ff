// pine-mcp-remote: one session with one remote MCP server (an agent's mcpServers entry with
// `url`), for the broker. pined starts it by exec, already inside the egress sandbox (network;
// no home, no .env), writes its job (the URL, the headers with their secrets filled in) on fd 3,
// and hands the other end of that socket to the broker, which then speaks MCP's stdio framing
// on it. It exits when the broker closes the socket.
#include <fcntl.h>
#include <signal.h>

#include <cstdio>
#include <string_view>

#include "common/sanitizer_no_proc.h"  // no /proc in its sandbox
#include "mcp_remote/connector.h"
#include "common/version_flag.h"

int main(int argc, char** argv) {
  if (pine::printedVersion(argc, argv, "pine-mcp-remote")) return 0;
  if (argc > 1 || fcntl(3, F_GETFD) == -1) {
    const bool help = argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h");
    std::fputs("usage: pine-mcp-remote   (no arguments: reads its job, one JSON line, on fd 3, then relays MCP\n"
               "                          messages, one a line, on the same socket; started by pined)\n",
               help ? stdout : stderr);
    return help ? 0 : 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a vanished broker is a failed write
  return pine::mcp_remote::runConnector(3);
}
