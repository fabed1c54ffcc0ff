// pine-egress: makes one HTTP(S) request for pined and exits. pined starts it by exec,
// already inside its sandbox (network; no home, no .env; seccomp; an unprivileged uid
// when pined is root), so this program enters nothing itself. The job comes on fd 3 (a
// socketpair with pined) and the answer goes back on it; run by hand, stdin and stdout.
#include <fcntl.h>
#include <signal.h>

#include <cstdio>
#include <string_view>

#include "common/sanitizer_no_proc.h"  // no /proc in its sandbox
#include "egress/job.h"
#include "common/version_flag.h"

int main(int argc, char** argv) {
  if (pine::printedVersion(argc, argv, "pine-egress")) return 0;
  if (argc > 1) {
    const std::string_view a = argv[1];
    const bool help = a == "--help" || a == "-h";
    std::fputs("usage: pine-egress   (no arguments: reads one EgressJob, proto/egress.capnp, on fd 3 or stdin,\n"
               "                      and writes EgressFrames to the same fd or stdout)\n",
               help ? stdout : stderr);
    return help ? 0 : 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a vanished pined is a failed write, which runJob reports
  const bool fromPined = fcntl(3, F_GETFD) != -1;
  return pine::egress::runJob(fromPined ? 3 : 0, fromPined ? 3 : 1);
}
