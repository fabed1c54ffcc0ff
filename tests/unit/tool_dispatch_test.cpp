// The broker carries out exactly the broker-side rows of the tool table that are carried out,
// and hands every other row to the worker: a row without a handler, or a handler without a
// row, would be a tool that is described but does nothing, or one nobody decided.
#include <doctest/doctest.h>

#include "broker/run.h"
#include "common/tool_table.h"

namespace tt = pine::tooltable;

TEST_CASE("tool dispatch: every broker row has its handler, and no handler lacks a row") {
  for (const auto& row : tt::builtinTools()) {
    CAPTURE(row.name);
    bool broker = row.side != tt::Side::Worker && row.carriedOut;
    CHECK(pine::Run::carriesOut(row.name) == broker);
    CHECK(pine::isBrokerTool(row.name) == broker);
  }
  CHECK_FALSE(pine::Run::carriesOut("rm"));
  CHECK_FALSE(pine::isBrokerTool("mcp__web__fetch"));
}
