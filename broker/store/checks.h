// Checks on rows before they are written, with errors that say what to pass instead, and
// small query helpers shared by the store's files.
#pragma once
#include <initializer_list>
#include <optional>
#include <string>

namespace pine::store {
struct Usage;
}

namespace pine::store::detail {

void requireNonEmpty(const std::string& value, const std::string& what);
// e.g. requireOneOf(t.state, {"queued", "running"}, "task 'x': state")
void requireOneOf(const std::string& value, std::initializer_list<const char*> allowed, const std::string& what);

// Counts and cost are finite and not negative.
void requireUsage(const Usage& u, const std::string& what);

// The smallest string greater than every string starting with prefix (byte-wise), so that
// "col >= prefix AND col < end" is a prefix filter an index can serve. nullopt: no bound
// (prefix empty or all 0xff bytes).
std::optional<std::string> prefixEnd(const std::string& prefix);

// Query limits: at least 1, at most 10000 rows in memory at once.
int clampLimit(int limit);

}  // namespace pine::store::detail
