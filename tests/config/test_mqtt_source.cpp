// An mqtt source's login and CA as the loader checks them: a secret missing from .env and a
// caFile that cannot be read are errors with their line; a caFile needs mqtts://; the
// broker's load (no .env) does not look at the CA file, which only pined reads.
#include <doctest/doctest.h>

#include "helpers.h"

using namespace pine::config;
using pine::config::test::dump;
using pine::config::test::findError;
using pine::config::test::TempHome;

namespace {

void withSource(const TempHome& h, const std::string& extra, const std::string& url = "mqtts://broker.lan") {
  // First in the example home's list: sources[0].
  h.replace("pine.yaml", "sources:\n",
            "sources:\n  - name: devices\n    type: mqtt\n    url: " + url +
                "\n    topics: [\"sensors/#\"]\n    usernameSecret: MQTT_USER\n"
                "    passwordSecret: MQTT_PASSWORD\n" + extra);
}

}  // namespace

TEST_CASE("mqtt source: a missing passwordSecret is named with its line; once in .env it loads") {
  TempHome h;
  withSource(h, "");
  h.write(".env", "MQTT_USER=someone\n");
  auto r = h.load();
  auto* e = findError(r.errors, "sources[0].passwordSecret");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->message == "secret 'MQTT_PASSWORD' is not in .env");
  CHECK(e->hint == "store it with `pinectl secret set MQTT_PASSWORD`");
  CHECK(e->line > 0);
  h.write(".env", "MQTT_USER=someone\nMQTT_PASSWORD=a-password-value\n");
  r = h.load();
  CHECK_MESSAGE(r.ok(), dump(r.errors));
}

TEST_CASE("mqtt source: a caFile that cannot be read, or holds no certificate, is an error at its line") {
  TempHome h;
  h.write(".env", "MQTT_USER=someone\nMQTT_PASSWORD=a-password-value\n");
  withSource(h, "    caFile: certs/missing.pem\n");
  auto r = h.load();
  auto* e = findError(r.errors, "sources[0].caFile");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->message.find("cannot read '" + h.path("certs/missing.pem") + "'") != std::string::npos);
  CHECK(e->line > 0);
  CHECK(e->format().find("pine.yaml:") != std::string::npos);

  h.write("certs/not-a-cert.pem", "hello\n");
  h.replace("pine.yaml", "certs/missing.pem", "certs/not-a-cert.pem");
  r = h.load();
  e = findError(r.errors, "sources[0].caFile");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->message.find("holds no PEM certificate") != std::string::npos);

  // The legitimate twin: a PEM certificate loads, and the broker's load (no .env, no CA) too.
  h.write("certs/ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  h.replace("pine.yaml", "certs/not-a-cert.pem", "certs/ca.pem");
  r = h.load();
  CHECK_MESSAGE(r.ok(), dump(r.errors));
  h.remove("certs/ca.pem");
  LoadOptions broker;
  broker.skipEnv = true;
  CHECK_MESSAGE(loadHome(h.root, broker).ok(), "the broker does not read the CA file");
}

TEST_CASE("mqtt source: caFile on a plain mqtt:// address is refused; ~ is not expanded") {
  TempHome h;
  h.write(".env", "MQTT_USER=someone\nMQTT_PASSWORD=a-password-value\n");
  h.write("ca.pem", "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n");
  withSource(h, "    caFile: ca.pem\n", "mqtt://broker.lan");
  auto r = h.load();
  auto* e = findError(r.errors, "sources[0].caFile");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->message == "caFile is for a TLS connection");
  TempHome t;
  t.write(".env", "MQTT_USER=someone\nMQTT_PASSWORD=a-password-value\n");
  withSource(t, "    caFile: ~/ca.pem\n");
  r = t.load();
  CHECK(findError(r.errors, "sources[0].caFile", "'~' is not expanded here"));
}
