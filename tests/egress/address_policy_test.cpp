// Address classes, on addresses made with inet_pton so no resolver is involved.
#include <arpa/inet.h>
#include <doctest/doctest.h>

#include <string>

#include "egress/address_policy.h"

using namespace pine::egress;

namespace {

AddressKind kind(const std::string& text) {
  in_addr a4{};
  if (inet_pton(AF_INET, text.c_str(), &a4) == 1) return classify(a4);
  in6_addr a6{};
  REQUIRE_MESSAGE(inet_pton(AF_INET6, text.c_str(), &a6) == 1, text);
  return classify(a6);
}

sockaddr_storage sockaddrOf(const std::string& text) {
  sockaddr_storage ss{};
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, text.c_str(), &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
  } else {
    REQUIRE(inet_pton(AF_INET6, text.c_str(), &in6->sin6_addr) == 1);
    in6->sin6_family = AF_INET6;
  }
  return ss;
}

}  // namespace

TEST_CASE("IPv4 classes") {
  for (const char* a : {"127.0.0.1", "127.255.255.254", "127.1.2.3"}) CHECK_MESSAGE(kind(a) == AddressKind::Loopback, a);
  for (const char* a : {"10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.254", "192.168.0.1", "192.168.255.255",
                        "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.254", "198.18.0.1", "198.19.255.1"}) {
    CHECK_MESSAGE(kind(a) == AddressKind::Private, a);
  }
  for (const char* a : {"0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1",
                        "192.0.2.1", "198.51.100.7", "203.0.113.9", "192.0.0.8"}) {
    CHECK_MESSAGE(kind(a) == AddressKind::Reserved, a);
  }
  // Just outside each private range.
  for (const char* a : {"9.255.255.255", "11.0.0.0", "172.15.255.255", "172.32.0.0", "192.167.255.255", "192.169.0.0",
                        "100.63.255.255", "100.128.0.0", "169.253.255.255", "169.255.0.0", "126.255.255.255",
                        "128.0.0.0", "1.1.1.1", "8.8.8.8", "93.184.216.34", "223.255.255.255", "198.17.255.255",
                        "198.20.0.0"}) {
    CHECK_MESSAGE(kind(a) == AddressKind::Public, a);
  }
}

TEST_CASE("IPv6 classes, including forms that carry an IPv4 address") {
  CHECK(kind("::1") == AddressKind::Loopback);
  CHECK(kind("::ffff:127.0.0.1") == AddressKind::Loopback);
  CHECK(kind("::ffff:7f00:1") == AddressKind::Loopback);
  for (const char* a : {"::ffff:10.0.0.1", "::ffff:192.168.1.1", "::ffff:169.254.169.254", "::ffff:100.64.0.1",
                        "::ffff:172.16.5.4", "fc00::1", "fd12:3456:789a::1", "fe80::1", "febf::1", "fec0::1",
                        "64:ff9b::10.0.0.1", "64:ff9b:1::1", "2002:0a00:0001::1", "2002:c0a8:0101::1"}) {
    CHECK_MESSAGE(kind(a) == AddressKind::Private, a);
  }
  CHECK(kind("64:ff9b::127.0.0.1") == AddressKind::Loopback);
  CHECK(kind("2002:7f00:0001::1") == AddressKind::Loopback);
  for (const char* a : {"::", "::ffff:0.0.0.0", "::ffff:224.0.0.1", "::10.0.0.1", "::8.8.8.8", "ff02::1", "ff05::2",
                        "2001:db8::1", "2001::1", "2001:10::1", "100::1", "4000::1", "e000::1"}) {
    CHECK_MESSAGE(kind(a) == AddressKind::Reserved, a);
  }
  for (const char* a : {"2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8",
                        "2002:0808:0808::1", "2001:4860:4860::8888"}) {
    CHECK_MESSAGE(kind(a) == AddressKind::Public, a);
  }
}

TEST_CASE("refusal follows the rules and names the address") {
  const AddressRules none{};
  const AddressRules loop{false, true};
  const AddressRules priv{true, false};
  const AddressRules both{true, true};
  auto refused = [](const std::string& a, AddressRules r) {
    const sockaddr_storage ss = sockaddrOf(a);
    return refusal(reinterpret_cast<const sockaddr*>(&ss), r);
  };
  CHECK_FALSE(refused("1.1.1.1", none));
  CHECK_FALSE(refused("2606:4700:4700::1111", none));
  REQUIRE(refused("127.0.0.1", none));
  CHECK(refused("127.0.0.1", none)->find("127.0.0.1 is a loopback address") != std::string::npos);
  CHECK_FALSE(refused("127.0.0.1", loop));
  CHECK_FALSE(refused("::1", loop));
  CHECK(refused("127.0.0.1", priv));
  CHECK(refused("10.0.0.1", loop));
  CHECK(refused("::ffff:10.0.0.1", loop));
  CHECK_FALSE(refused("10.0.0.1", priv));
  CHECK_FALSE(refused("fe80::1", priv));
  // 0.0.0.0 reaches this host on Linux: never allowed, whatever the rules.
  CHECK(refused("0.0.0.0", both));
  CHECK(refused("::", both));
  CHECK(refused("224.0.0.1", both));
  REQUIRE(refused("::ffff:10.0.0.1", none));
  CHECK(refused("::ffff:10.0.0.1", none)->find("private") != std::string::npos);

  sockaddr unix{};
  unix.sa_family = AF_UNIX;
  CHECK(refusal(&unix, both));
  CHECK(classify(static_cast<const sockaddr*>(nullptr)) == AddressKind::Reserved);
}
