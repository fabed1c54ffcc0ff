// MCP servers' pinned tool lists (schema v7): written when a server's first list arrives and
// when the owner accepts a changed one (pinectl mcp review).
#include "broker/store/checks.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

std::optional<std::string> Store::mcpPins(const std::string& agent, const std::string& server) const {
  auto st = db_->prepare("SELECT pins FROM mcp_pins WHERE agent = ?1 AND server = ?2", "reading an MCP server's pins");
  st.bind(1, agent).bind(2, server);
  if (!st.step()) return std::nullopt;
  return st.text(0);
}

void Store::setMcpPins(const std::string& agent, const std::string& server, const std::string& pinsJson, long long nowMs) {
  requireNonEmpty(agent, "MCP pins agent");
  requireNonEmpty(server, "MCP pins server");
  auto st = db_->prepare(
      "INSERT INTO mcp_pins (agent, server, pins, pinned_ms) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT (agent, server) DO UPDATE SET pins = excluded.pins, pinned_ms = excluded.pinned_ms",
      "pinning an MCP server's tools");
  st.bind(1, agent).bind(2, server).bind(3, pinsJson).bind(4, nowMs);
  st.run();
}

}  // namespace pine::store
