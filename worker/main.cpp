// pine-worker: one per task, started by pined with its only link on fd 3.
// Assumed hostile by everyone else; it reaches nothing but the broker.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "common/fd.h"
#include "common/link_stream.h"
#include "common/rpc_link.h"
#include "proto/broker.capnp.h"
#include "worker/agent_loop.h"
#include "common/version_flag.h"

int main(int argc, char** argv) {
  if (pine::printedVersion(argc, argv, "pine-worker")) return 0;
  // The link to the broker is fd 3, and nothing this worker starts may inherit it.
  struct stat st;
  if (fstat(3, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    std::cerr << "pine-worker is started by pined, with its link to the broker on fd 3\n";
    return 2;
  }
  pine::setCloexec(3, true);
  (void)argc;
  (void)argv;  // --task and --agent are for `ps`; the task itself comes from the broker.

  auto io = kj::setupAsyncIo();
  pine::RpcLink link(pine::wrapLinkSocket(io.unixEventPort, 3),
                     capnp::rpc::twoparty::Side::CLIENT, nullptr, 1 << 20);
  auto broker = link.peer().castAs<pine::proto::Broker>();
  int code = 1;
  try {
    code = pine::runAgentTask(broker, io.waitScope);
  } catch (kj::Exception& e) {
    std::cerr << "pine-worker: " << e.getDescription().cStr() << "\n";
  } catch (std::exception& e) {
    std::cerr << "pine-worker: " << e.what() << "\n";
  }
  // Leave without tearing the link down in destructors: the broker may already have closed
  // its end, and nothing is left to say.
  fflush(stdout);
  fflush(stderr);
  _exit(code);
}
