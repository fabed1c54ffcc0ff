// The checks pined makes before it starts an egress process, and the job it sends: only the
// values the request names, none for a refused request or one that names none.
#include <doctest/doctest.h>

#include <capnp/serialize.h>

#include <map>
#include <string>

#include "egress/request/placeholders.h"
#include "proto/egress.capnp.h"
#include "supervisor/egress_call.h"

using namespace pine::egress;

namespace {

struct CountingSecrets : SecretLookup {
  std::map<std::string, std::string, std::less<>> values{{"A_KEY", "value-of-a-7f3c9e21"},
                                                         {"B_KEY", "value-of-b-0d44b8aa"},
                                                         {"C_KEY", "value-of-c-93ee10f5"}};
  mutable int lookups = 0;
  std::optional<std::string> get(std::string_view name) const override {
    ++lookups;
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
};

std::string bytesOf(const kj::Array<capnp::word>& words) {
  auto b = words.asBytes();
  return std::string(reinterpret_cast<const char*>(b.begin()), b.size());
}

}  // namespace

TEST_CASE("templates: the names a request uses, once each, from the URL and header values") {
  EgressRequest req;
  req.url = "https://api.example.com/v1/${secret:A_KEY}?k=${secret:B_KEY}&again=${secret:A_KEY}";
  req.headers = {{"Authorization", "Bearer ${secret:C_KEY}"}, {"X-Both", "${secret:A_KEY}:${secret:C_KEY}"}};
  Templates t;
  REQUIRE_FALSE(checkTemplates(req, t));
  CHECK(t.names() == std::vector<std::string>{"A_KEY", "B_KEY", "C_KEY"});
  CHECK(t.url.size() == 3);
  REQUIRE(t.headers.size() == 2);
  CHECK(t.headers[1].size() == 2);
}

TEST_CASE("templates: placeholders where a value would leak or change the request are refused") {
  auto refused = [](EgressRequest req, const std::string& expect) {
    Templates t;
    auto why = checkTemplates(req, t);
    REQUIRE_MESSAGE(why, req.url);
    CHECK_MESSAGE(why->find(expect) != std::string::npos, *why);
  };
  EgressRequest req;
  req.url = "https://${secret:A_KEY}.example.com/";
  refused(req, "host part");
  req.url = "https://user@host${secret:A_KEY}:443/";
  refused(req, "host part");
  req.url = "${secret:A_KEY}://example.com/";
  refused(req, "scheme");
  req.url = "https://example.com/";
  req.method = "G${secret:A_KEY}";
  refused(req, "method");
  req.method = "GET";
  req.body = "${secret:A_KEY}";
  refused(req, "body");
  req.body.clear();
  req.headers = {{"X-${secret:A_KEY}", "v"}};
  refused(req, "header name");
  req.headers = {{"X-Token", "${secret:A KEY}"}};
  refused(req, "malformed");
  req.headers = {{"Host", "example.com"}};
  refused(req, "Host header");
  req.headers = {{"X-Evil", "a\r\nInjected: 1"}};
  refused(req, "line break");
}

TEST_CASE("the job for a request holds the values it names and no other") {
  CountingSecrets secrets;
  EgressRequest req;
  req.method = "POST";
  req.url = "https://api.example.com/v1/messages";
  req.headers = {{"x-api-key", "${secret:A_KEY}"}, {"X-Other", "${secret:NOT_IN_ENV}"}};
  req.body = "{\"q\":1}";
  EgressPolicy policy;
  policy.caPem = "-----BEGIN CERTIFICATE-----\n";
  pine::PreparedJob job = pine::prepareEgressJob(req, policy, secrets);
  REQUIRE(job.refused.empty());
  const std::string bytes = bytesOf(job.message);
  CHECK(bytes.find(secrets.values["A_KEY"]) != std::string::npos);
  CHECK(bytes.find(secrets.values["B_KEY"]) == std::string::npos);
  CHECK(bytes.find(secrets.values["C_KEY"]) == std::string::npos);
  CHECK(secrets.lookups == 2);  // A_KEY and NOT_IN_ENV: nothing else was looked up

  capnp::FlatArrayMessageReader reader(job.message);
  auto j = reader.getRoot<pine::proto::egress::EgressJob>();
  REQUIRE(j.getSecrets().size() == 1);  // a name the store does not know is left for egress to report
  CHECK(std::string(j.getSecrets()[0].getName().cStr()) == "A_KEY");
  CHECK(std::string(j.getRequest().getHeaders()[0].getValue().cStr()) == "${secret:A_KEY}");  // filled in by egress
  CHECK(j.getPolicy().getCaBundle().size() == policy.caPem.size());

  SUBCASE("a request that names none, as every download: no value at all") {
    CountingSecrets none;
    EgressRequest get;
    get.url = "https://files.example.com/x.bin";
    pine::PreparedJob d = pine::prepareEgressJob(get, EgressPolicy{}, none);
    REQUIRE(d.refused.empty());
    capnp::FlatArrayMessageReader r(d.message);
    CHECK(r.getRoot<pine::proto::egress::EgressJob>().getSecrets().size() == 0);
    CHECK(none.lookups == 0);
  }
  SUBCASE("a refused request: no job, and no value looked up") {
    CountingSecrets none;
    EgressRequest bad;
    bad.url = "https://${secret:A_KEY}.example.com/";
    pine::PreparedJob d = pine::prepareEgressJob(bad, EgressPolicy{}, none);
    CHECK(d.refused.find("GET https://${secret:A_KEY}.example.com/: a secret placeholder in the host part") == 0);
    CHECK(d.message.size() == 0);
    CHECK(none.lookups == 0);
  }
}

TEST_CASE("urlForMessages: a message shows no userinfo, whatever it holds, and the rest of the address as it is") {
  CHECK(urlForMessages("ftp://${secret:U}:${secret:P}@127.0.0.1:21/drop/") == "ftp://127.0.0.1:21/drop/");
  CHECK(urlForMessages("https://user:pass@example.com") == "https://example.com");
  CHECK(urlForMessages("https://example.com/a@b?c=d@e") == "https://example.com/a@b?c=d@e");  // '@' past the host stays
  CHECK(urlForMessages("https://example.com/${secret:K}") == "https://example.com/${secret:K}");
  CHECK(urlForMessages("no scheme@here") == "no scheme@here");
  const std::string longUrl = "https://example.com/" + std::string(300, 'a');
  CHECK(urlForMessages(longUrl) == longUrl.substr(0, 200) + "...");
}
