// Who may use pine.sock and pined.sock: pine's uid, or a peer whose kernel group list
// holds the admin group; the credentials come from the kernel, never from the client.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include <kj/io.h>
#include "common/unix_socket.h"
#include "common/cloexec.h"

using namespace pine;

TEST_CASE("peer access: the owner's uid, or the admin group in the peer's groups, and nobody else") {
  SocketAccess access{1000, 990, "pine-admin"};
  CHECK(judgePeer(PeerCredentials{1000, {1000}}, access).allowed);
  // A member: the group anywhere in its list (primary or supplementary).
  CHECK(judgePeer(PeerCredentials{1001, {1001, 27, 990}}, access).allowed);
  CHECK(judgePeer(PeerCredentials{1001, {990}}, access).allowed);

  // Not a member: refused, with the uid, the group and what to do.
  auto other = judgePeer(PeerCredentials{1002, {1002, 27}}, access);
  CHECK_FALSE(other.allowed);
  CHECK(other.uid == 1002);
  CHECK(other.reason.find("uid 1002") != std::string::npos);
  CHECK(other.reason.find("pine-admin (gid 990)") != std::string::npos);
  CHECK(other.reason.find("log in again") != std::string::npos);
  // Root is no exception: it may become pine's user, but the socket does not take its word.
  CHECK_FALSE(judgePeer(PeerCredentials{0, {0}}, access).allowed);
  // No credentials from the kernel: refused.
  CHECK_FALSE(judgePeer(std::nullopt, access).allowed);

  // Without an admin group, the group list opens nothing, even a group with pine's number.
  SocketAccess alone{1000, std::nullopt, ""};
  CHECK(judgePeer(PeerCredentials{1000, {}}, alone).allowed);
  auto member = judgePeer(PeerCredentials{1001, {990, 1000}}, alone);
  CHECK_FALSE(member.allowed);
  CHECK(member.reason.find("without an admin group") != std::string::npos);
}

TEST_CASE("peer access: the kernel's credentials of a real connection") {
  int sv[2];
  REQUIRE(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  kj::AutoCloseFd a(sv[0]), b(sv[1]);
  auto peer = peerCredentials(a.get());
  REQUIRE(peer);
  CHECK(peer->uid == getuid());
  REQUIRE_FALSE(peer->groups.empty());
  CHECK(peer->groups.front() == getgid());
  int n = getgroups(0, nullptr);
  std::vector<gid_t> mine((size_t)std::max(n, 0));
  if (n > 0) getgroups(n, mine.data());
  for (gid_t g : mine) CHECK(std::find(peer->groups.begin(), peer->groups.end(), g) != peer->groups.end());

  // This process's rule: our own uid.
  setSocketAccess(SocketAccess{getuid(), std::nullopt, ""});
  CHECK(checkPeer(a.get()).allowed);
  setSocketAccess(SocketAccess{getuid() + 1, std::nullopt, ""});
  CHECK_FALSE(checkPeer(a.get()).allowed);
  // The admin group opens it when the group is ours.
  setSocketAccess(SocketAccess{getuid() + 1, getgid(), "ours"});
  CHECK(checkPeer(a.get()).allowed);
  setSocketAccess(SocketAccess{getuid(), std::nullopt, ""});

  // Not a socket: the kernel says nothing, so nobody is let in.
  int p[2];
  REQUIRE(pipe(p) == 0);
  kj::AutoCloseFd r(p[0]), w(p[1]);
  CHECK_FALSE(peerCredentials(r.get()));
  CHECK_FALSE(checkPeer(r.get()).allowed);
}
